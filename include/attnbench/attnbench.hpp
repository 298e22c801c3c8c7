// attnbench: scaled dot-product attention on the CPU, O = softmax(Q K^T * scale) V.
//
// The umbrella header: everything a user calls. By job:
//   attnbench/types.hpp      Shape, the K/V storage types (KvType) and their conversions, Error
//   attnbench/registry.hpp   the kernels ("tiled/simd", "naive/openblas", ...), which run here
//   attnbench/workspace.hpp  the scratch memory a call takes its buffers from
//   attnbench/attention.hpp  Options, Tensors, Gradients; attention() and attention_backward()
//   attnbench/kv_cache.hpp   the persistent KV cache a decode loop appends to
//   attnbench/version.hpp    the library's version
// docs/user-guide.md shows a call; docs/architecture.md how the library is laid out.
#pragma once

#include "attnbench/attention.hpp"
#include "attnbench/kv_cache.hpp"
#include "attnbench/registry.hpp"
#include "attnbench/types.hpp"
#include "attnbench/version.hpp"
#include "attnbench/workspace.hpp"
