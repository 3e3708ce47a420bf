#include <gtest/gtest.h>

#include <string>

#include "core/report.h"
#include "core/types/algorithm_map.h"
#include "tests/support/core_checks.h"

namespace {

// Two layers, a GD family with steps k = 1, 2, 4 and an unavailable GD++ family; three scatter prompts.
icl::AlgorithmMap handMadeMap()
{
    icl::AlgorithmMap m;
    m.layers = {1, 2};
    icl::AlgorithmFamilyMap gd;
    gd.family = "gd";
    gd.step_name = "k";
    gd.steps = {1, 2, 4};
    gd.sim_errors = {0.1, 0.2, 0.3, 0.4, 0.5, 0.6};
    gd.sim_weights = gd.sim_errors;
    icl::AlgorithmFamilyMap gdpp;
    gdpp.family = "gdpp";
    gdpp.unavailable = "no fitted GD++ scalars";
    m.families = {gd, gdpp};
    m.n_scatter = 3;
    m.scatter_model = {1.0, 2.0, 3.0, -4.0, 5.0, 6.0};                             // [layers × prompts]
    m.scatter_algorithm = {{0.5, 1.5, 2.5, 1.0, 2.0, 7.5, 9.0, 9.0, 9.0}, {}};  // GD: [steps × prompts]
    return m;
}

} // namespace

TEST(Report, AlgorithmMapCellFigureShowsTheLayerAgainstTheAlgorithmOnEveryPrompt)
{
    const icl::AlgorithmMap m = handMadeMap();
    // Layer 2 (index 1) against GD step k = 2 (index 1).
    const icl::Figure f = icl::algorithmMapCellFigure(m, "gd", 1, 1, icl::RunSummary{});
    EXPECT_EQ(f.name, "algorithm_map_scatter");
    ASSERT_EQ(f.series.size(), 2u);
    EXPECT_EQ(f.series[0].x, (std::vector<double>{1.0, 2.0, 7.5}));
    EXPECT_EQ(f.series[0].y, (std::vector<double>{-4.0, 5.0, 6.0}));
    EXPECT_EQ(f.series[0].name, "prompts (3)");
    // The diagonal spans every value (and 0).
    EXPECT_EQ(f.series[1].x, (std::vector<double>{-4.0, 7.5}));
    EXPECT_EQ(f.series[1].y, (std::vector<double>{-4.0, 7.5}));
    EXPECT_EQ(f.metadata.at("similarity_of_errors"), "0.5");
    EXPECT_NE(f.title.find("Layer 2"), std::string::npos) << f.title;

    icl::test::expectError([&] { icl::algorithmMapCellFigure(m, "gdpp", 0, 0, icl::RunSummary{}); }, "not available");
    icl::test::expectError([&] { icl::algorithmMapCellFigure(m, "newton", 0, 0, icl::RunSummary{}); }, "not available");
    icl::test::expectError([&] { icl::algorithmMapCellFigure(m, "gd", 2, 0, icl::RunSummary{}); }, "no cell");
    icl::test::expectError([&] { icl::algorithmMapCellFigure(m, "gd", 0, 3, icl::RunSummary{}); }, "no cell");
    icl::AlgorithmMap bare = m;
    bare.n_scatter = 0;
    icl::test::expectError([&] { icl::algorithmMapCellFigure(bare, "gd", 0, 0, icl::RunSummary{}); }, "no per-prompt");
}
