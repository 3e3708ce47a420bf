#pragma once
// GD alignment (von Oswald et al. 2022): compare a trained model with gradient descent on the same
// prompts through prediction difference, model cosine and model difference. Torch-free facade.

#include <cstdint>
#include <functional>
#include <string>

#include "core/types/alignment.h"

namespace icl {

struct GdAlignmentOptions {
    int64_t checkpoint_step = -1;  ///< -1 = last checkpoint
    std::string reference = "gd_1"; ///< "gd_k": k GD steps with the η fitted during training
    int64_t n_prompts = 0;         ///< 0 = the config's eval.n_prompts
    uint64_t seed = 0;             ///< 0 = the experiment's own evaluation prompts
    bool store = true;             ///< store under /analysis/gd_alignment/<id>
    int threads = 0;
};

/// Alignment of checkpoint `checkpoint_step` of the experiment at `path` with `reference`.
/// With seed = 0 the prompts are the run's fixed evaluation prompts. Throws icl::Error for a file
/// without checkpoints or an unknown reference. Thread affinity: worker thread.
AlignmentResult computeGdAlignment(const std::string& path, const GdAlignmentOptions& options);

} // namespace icl
