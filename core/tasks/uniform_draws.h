#pragma once
// Uniform draws from a LibTorch CPU generator, bitwise as torch::rand draws them, in vector code. Core-internal
// (LibTorch).

#include <torch/torch.h>

namespace icl {

/// The tensor torch::rand(sizes, gen, float64) returns, bit for bit, leaving `gen` in the state torch::rand
/// leaves it (so later draws from `gen` do not change either). LibTorch's CPU kernel draws element i, in
/// memory order, as u_i = (r_i mod 2^53)·2^−53 from the 64-bit number r_i = (w_2i << 32) | w_2i+1 made of two
/// consecutive outputs of the generator's MT19937 engine, one virtual call per element; this function
/// advances the engine's 624-word state a whole block at a time with the same recurrence (Matsumoto &
/// Nishimura 1998) and tempers and converts the words in loops the compiler vectorises (docs/performance.md,
/// "Prompt draws"). Returns a contiguous float64
/// CPU tensor of `sizes`. Takes the generator's mutex, as torch::rand does; callable from any thread.
/// Throws c10::Error when `gen` is not a CPU generator.
torch::Tensor drawUniform(at::Generator& gen, at::IntArrayRef sizes);

/// U(−range, range): the tensor (torch::rand(sizes, gen, float64) · 2 − 1) · range, bit for bit (the same three
/// rounded float64 operations per element, in one pass), with `gen` left as that expression leaves it.
/// The draw of x in Garg et al.'s and von Oswald et al.'s prompts (docs/science.md §0). Same threading and
/// errors as drawUniform.
torch::Tensor drawSymmetricUniform(at::Generator& gen, at::IntArrayRef sizes, double range);

} // namespace icl
