#pragma once
// Torch-free progress report passed from the training loop (worker thread) to its caller.

#include <cstdint>
#include <map>
#include <string>

namespace icl {

/// Reported after every optimisation step. When `evaluated` is true the eval fields hold the
/// model's and every baseline's loss on the fixed evaluation prompts at this step.
struct TrainProgress {
    enum class Phase { Preparing, Training, Finished };
    Phase phase = Phase::Training;
    std::string message;          ///< what is happening, for status bars ("fitting GD η on 10000 prompts")
    int64_t step = 0;             ///< optimisation steps completed
    int64_t start_step = 0;       ///< step the run (re)started from
    int64_t total_steps = 0;
    double train_loss = 0.0;      ///< loss of the batch of this step
    double lr = 0.0;              ///< learning rate η used for this step
    double grad_norm = 0.0;       ///< global gradient norm before clipping
    double elapsed_s = 0.0;       ///< wall time since this (re)start
    bool evaluated = false;
    double eval_loss = 0.0;
    std::map<std::string, double> baselines;  ///< name -> eval loss, e.g. "gd_1", "least_squares"
    bool checkpointed = false;    ///< a checkpoint for `step` was committed to the file
    double checkpoint_train_loss = 0.0;  ///< when checkpointed: the train loss stored with it (mean since the last evaluation)
    double wall_time_s = 0.0;     ///< total training wall time of the run, across resumes (as stored in the file)
};

} // namespace icl
