// The keys the kernels visit under a call's options: the causal mask and window's KeyMask, and
// within it the band around each row's diagonal key that the mask tensor keeps keys in. Internal
// to the library.
#pragma once

#include <cstddef>
#include <functional>

#include <attnbench/attnbench.hpp>

namespace attnbench::driver {

// The options' KeyMask, narrowed, when the call has a mask tensor (Options::mask), to the band
// of keys from the diagonal key it keeps any in: a causal or banded mask given as a tensor (as
// Hugging Face models pass theirs) then skips the key blocks it removes, as the causal mask and
// windows do. The keys outside the band are ones the tensor removes, so the result is the same up
// to rounding (the online softmax meets fewer blocks). One scan of the tensor's rows, in
// `for_each(count, task)`'s tasks (task(t) for t in [0, count), on the call's threads), or inline.
using ForEach = std::function<void(std::size_t, const std::function<void(std::size_t)>&)>;
KeyMask kernel_key_mask(const Shape& shape, const Options& options, const ForEach& for_each = {});

}  // namespace attnbench::driver
