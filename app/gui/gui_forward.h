#pragma once
// Forward declarations of the Qt and icl::widgets classes the GUI's headers hold pointers to, so that each
// header includes this one line instead of its own list.

class QAction;
class QBoxLayout;
class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QFormLayout;
class QGridLayout;
class QGroupBox;
class QHBoxLayout;
class QLabel;
class QLineEdit;
class QListWidget;
class QMenu;
class QProgressBar;
class QPushButton;
class QRadioButton;
class QScrollArea;
class QSpinBox;
class QSplitter;
class QStackedWidget;
class QTabWidget;
class QTableWidget;
class QTextBrowser;
class QTimer;
class QVBoxLayout;
class QWidget;

namespace icl::widgets {
class AttentionGrid;
class AttentionPatternView;
class BarChartView;
class CheckpointTimeline;
class ExemplarStrip;
class HeatmapView;
class PlotView;
} // namespace icl::widgets
