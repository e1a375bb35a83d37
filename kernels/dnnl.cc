// strata.dnnl.*: dense, matmul and conv2d through oneDNN primitives (see dnnl.h).
#include "kernels/dnnl.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

#include "kernels/tensor_args.h"
#include "vm/kernel_threads.h"
#include "vm/registry.h"

// From libgomp, oneDNN's OpenMP runtime (kernels/CMakeLists.txt says why it is
// declared here rather than taken from a compiler's omp.h).
extern "C" void omp_set_num_threads(int num_threads);

namespace strata::kernels {
namespace {

constexpr const char* kDense = "strata.dnnl.dense";
constexpr const char* kDenseBias = "strata.dnnl.dense_bias";
constexpr const char* kDenseRelu = "strata.dnnl.dense_relu";
constexpr const char* kDenseBiasRelu = "strata.dnnl.dense_bias_relu";
constexpr const char* kMatmul = "strata.dnnl.matmul";
constexpr const char* kConv2d = "strata.dnnl.conv2d";
constexpr const char* kConv2dBias = "strata.dnnl.conv2d_bias";
constexpr const char* kConv2dRelu = "strata.dnnl.conv2d_relu";
constexpr const char* kConv2dBiasRelu = "strata.dnnl.conv2d_bias_relu";

constexpr size_t kMaxCachedPrimitives = 1024;
constexpr size_t kAlignment = 64;

using dnnl::memory;
using Dims = memory::dims;

// ---- argument checking ---------------------------------------------------------

// Argument `index` as a Shape of `size` values, each >= min_value.
Status GetInts(const char* fn, const vm::Value* const* args, int index, const char* param, size_t size,
               const char* meaning, int64_t min_value, std::span<const int64_t>* out_values) {
  const vm::Value& v = *args[index];
  if (!v.is_shape() || v.shape().size() != size) {
    return Status(ErrorStatus() << fn << ": argument " << param << " must be a Shape of " << size << " values "
                                << meaning << ", got " << v.Describe());
  }
  for (int64_t x : v.shape()) {
    if (x < min_value) {
      return Status(ErrorStatus() << fn << ": argument " << param << " must be "
                                  << (min_value > 0 ? "positive" : "non-negative") << ", got "
                                  << vm::ShapeToString(v.shape()));
    }
  }
  *out_values = v.shape();
  return Status::Ok();
}

// out[(i * channels + c) * inner + j] = bias[c] (or 0), clamped at 0 with relu: the result
// of an empty reduction, which oneDNN is not asked to compute.
void FillChannels(float* out, int64_t outer, int64_t channels, int64_t inner, const vm::Tensor* bias, bool relu) {
  const float* b = bias != nullptr ? bias->data_as<const float>() : nullptr;
  for (int64_t i = 0; i < outer; ++i) {
    for (int64_t c = 0; c < channels; ++c) {
      const float v = b != nullptr ? (relu ? std::max(b[c], 0.0f) : b[c]) : 0.0f;
      std::fill_n(out + (i * channels + c) * inner, inner, v);
    }
  }
}

// ---- oneDNN objects shared by every call ---------------------------------------

// Never destroyed: cached primitives refer to it, and static destructors run in no useful order.
const dnnl::engine& Engine() {
  static const dnnl::engine* engine = new dnnl::engine(dnnl::engine::kind::cpu, 0);
  return *engine;
}

// One operand of a primitive: the layout of the VM's buffer and, when the primitive wants
// another layout, the reorder between the two (buffer -> internal for inputs, back for the output).
struct Operand {
  int arg = 0;  // DNNL_ARG_*
  memory::desc user;
  memory::desc internal;
  std::optional<dnnl::reorder> reorder;
  memory::desc reorder_scratchpad;
};

struct Primitive {
  dnnl::primitive primitive;
  memory::desc scratchpad;
  std::vector<Operand> operands;  // the inputs, then the output
};

// Primitives are shared by all threads, so none may use oneDNN's library scratchpad, which
// (DNNL_ENABLE_CONCURRENT_EXEC=OFF, the default build) ties a primitive to the creating thread.
dnnl::primitive_attr UserScratchpadAttr(bool relu) {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  if (relu) {
    dnnl::post_ops ops;
    ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, 0.0f, 0.0f);
    attr.set_post_ops(ops);
  }
  return attr;
}

// An operand in the layout the primitive chose; adds the reorder when that differs from `user`.
Operand MakeOperand(int arg, const memory::desc& user, const memory::desc& internal, bool is_output) {
  Operand op{arg, user, internal, std::nullopt, memory::desc()};
  if (user != internal) {
    const dnnl::reorder::primitive_desc pd =
        is_output ? dnnl::reorder::primitive_desc(Engine(), internal, Engine(), user, UserScratchpadAttr(false))
                  : dnnl::reorder::primitive_desc(Engine(), user, Engine(), internal, UserScratchpadAttr(false));
    op.reorder = dnnl::reorder(pd);
    op.reorder_scratchpad = pd.scratchpad_desc();
  }
  return op;
}

using CacheKey = std::vector<int64_t>;

std::mutex cache_mutex;
std::atomic<int64_t> cache_hits{0}, cache_misses{0};

// Never destroyed, like the engine.
std::map<CacheKey, std::shared_ptr<const Primitive>>& Cache() {
  static auto* cache = new std::map<CacheKey, std::shared_ptr<const Primitive>>();
  return *cache;
}

// The cached primitive of `key`, made by `make` on a miss. Creation runs outside the lock
// (it takes milliseconds); two threads missing the same key both create one, the first
// stored wins. Entries are shared_ptrs, so emptying the cache never frees a running primitive.
template <typename Make>
std::shared_ptr<const Primitive> GetPrimitive(const CacheKey& key, Make make) {
  {
    std::lock_guard<std::mutex> lock(cache_mutex);
    auto it = Cache().find(key);
    if (it != Cache().end()) {
      cache_hits.fetch_add(1, std::memory_order_relaxed);
      return it->second;
    }
  }
  cache_misses.fetch_add(1, std::memory_order_relaxed);
  auto made = std::make_shared<const Primitive>(make());
  std::lock_guard<std::mutex> lock(cache_mutex);
  if (Cache().size() >= kMaxCachedPrimitives) Cache().clear();
  return Cache().emplace(key, std::move(made)).first->second;
}

size_t AlignUp(size_t n) { return (n + kAlignment - 1) / kAlignment * kAlignment; }

// Scratchpad and reordered tensors of the calling thread; grows, never shrinks. One call
// uses it at a time (calls are synchronous), so primitives never share a scratchpad.
class Workspace {
 public:
  char* Get(size_t bytes) {
    if (bytes > size_) {
      data_.reset();
      size_ = 0;
      void* p = std::aligned_alloc(kAlignment, AlignUp(bytes));
      if (p == nullptr) throw std::bad_alloc();
      data_.reset(static_cast<char*>(p));
      size_ = AlignUp(bytes);
    }
    return data_.get();
  }

 private:
  struct Free {
    void operator()(char* p) const { std::free(p); }
  };
  std::unique_ptr<char, Free> data_;
  size_t size_ = 0;
};

memory Wrap(const memory::desc& md, void* data) { return memory(md, Engine(), data); }

// Runs `p` on `buffers` (the VM tensors, one per operand, in order) and waits for it.
void Execute(const Primitive& p, std::span<void* const> buffers) {
  size_t internal_bytes = 0, scratch_bytes = p.scratchpad.get_size();
  for (const Operand& op : p.operands) {
    if (op.reorder) {
      internal_bytes += AlignUp(op.internal.get_size());
      scratch_bytes = std::max(scratch_bytes, op.reorder_scratchpad.get_size());
    }
  }
  thread_local Workspace workspace;
  char* free_space = workspace.Get(internal_bytes + scratch_bytes);
  char* scratch = free_space + internal_bytes;  // primitives run one after another: they share it
  thread_local dnnl::stream stream(Engine());   // creating one per call costs about 1 us
  // oneDNN runs on OpenMP (Debian's build) with as many threads as the VM's
  // pool has (--threads), in each thread that calls it (the count is a
  // per-thread OpenMP setting): more would compete with the pool's workers
  // for the same cores.
  thread_local const bool omp_threads_set = [] {
    omp_set_num_threads(vm::KernelThreadCount());
    return true;
  }();
  (void)omp_threads_set;
  auto with_scratchpad = [&](std::unordered_map<int, memory> args, const memory::desc& md) {
    if (md.get_size() > 0) args[DNNL_ARG_SCRATCHPAD] = Wrap(md, scratch);
    return args;
  };
  auto run_reorder = [&](const Operand& op, const memory& from, const memory& to) {
    op.reorder->execute(stream, with_scratchpad({{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}}, op.reorder_scratchpad));
  };
  std::unordered_map<int, memory> args;
  for (size_t i = 0; i < p.operands.size(); ++i) {
    const Operand& op = p.operands[i];
    memory user = Wrap(op.user, buffers[i]);
    args[op.arg] = user;
    if (!op.reorder) continue;
    args[op.arg] = Wrap(op.internal, free_space);
    free_space += AlignUp(op.internal.get_size());
    if (i + 1 < p.operands.size()) run_reorder(op, user, args[op.arg]);  // the output goes back after the run
  }
  p.primitive.execute(stream, with_scratchpad(args, p.scratchpad));
  const Operand& out = p.operands.back();
  if (out.reorder) run_reorder(out, args[out.arg], Wrap(out.user, buffers.back()));
  stream.wait();
}

// Runs `body`, turning the exceptions of oneDNN (and of allocation) into errors.
template <typename Body>
Status Guard(const char* fn, Body body) {
  try {
    body();
    return Status::Ok();
  } catch (const dnnl::error& e) {
    return Status(ErrorStatus() << fn << ": oneDNN: " << e.what());
  } catch (const std::exception& e) {
    return Status(ErrorStatus() << fn << ": " << e.what());
  }
}

// ---- matmul and dense ----------------------------------------------------------

Dims RowMajorStrides(const Dims& dims) {
  Dims strides(dims.size());
  int64_t s = 1;
  for (size_t i = dims.size(); i-- > 0;) {
    strides[i] = s;
    s *= dims[i];
  }
  return strides;
}

// dst[..., m, n] = src[..., m, k] @ weights[..., k, n] (+ bias[n]) (relu), src and dst row-major.
// transposed_weights: weights are a row-major (n, k) matrix (2-D only).
struct MatmulProblem {
  Dims src, weights, dst;
  bool transposed_weights = false, bias = false, relu = false;
};

Primitive MakeMatmul(const MatmulProblem& p) {
  const memory::data_type f32 = memory::data_type::f32;
  const memory::desc src(p.src, f32, RowMajorStrides(p.src));
  const memory::desc dst(p.dst, f32, RowMajorStrides(p.dst));
  const int64_t k = p.weights[p.weights.size() - 2], n = p.weights.back();
  // W[n, k] read in place as the (k, n) matrix it is the transpose of (format_tag::ba).
  const memory::desc weights = p.transposed_weights ? memory::desc(p.weights, f32, Dims{1, k})
                                                    : memory::desc(p.weights, f32, RowMajorStrides(p.weights));
  const memory::desc bias = p.bias ? memory::desc(Dims{1, n}, f32, Dims{n, 1}) : memory::desc();
  const dnnl::matmul::desc desc =
      p.bias ? dnnl::matmul::desc(src, weights, bias, dst) : dnnl::matmul::desc(src, weights, dst);
  const dnnl::matmul::primitive_desc pd(desc, UserScratchpadAttr(p.relu), Engine());
  Primitive prim{dnnl::matmul(pd), pd.scratchpad_desc(), {}};
  prim.operands.push_back(MakeOperand(DNNL_ARG_SRC, src, src, false));
  prim.operands.push_back(MakeOperand(DNNL_ARG_WEIGHTS, weights, weights, false));
  if (p.bias) prim.operands.push_back(MakeOperand(DNNL_ARG_BIAS, bias, bias, false));
  prim.operands.push_back(MakeOperand(DNNL_ARG_DST, dst, dst, true));
  return prim;
}

Status RunMatmul(const char* fn, const MatmulProblem& p, std::vector<void*> buffers) {
  return Guard(fn, [&] {
    CacheKey key = {0, p.transposed_weights, p.bias, p.relu, static_cast<int64_t>(p.src.size())};
    key.insert(key.end(), p.src.begin(), p.src.end());
    key.insert(key.end(), p.weights.begin(), p.weights.end());
    Execute(*GetPrimitive(key, [&] { return MakeMatmul(p); }), buffers);
  });
}

// Y[..., n] = X[..., k] @ W[n, k]^T (+ b[n]) (relu).
Status Dense(const char* fn, const vm::Value* const* args, int32_t num_args, bool with_bias, bool relu) {
  DenseArgs d;
  STRATA_RETURN_IF_ERROR(GetDenseArgs(fn, args, num_args, with_bias, "b", "Y", &d));
  vm::Tensor *x = d.x, *w = d.w, *bias = d.bias, *y = d.out;
  const int64_t m = d.m, n = d.n, k = d.k;
  if (y->num_elements() == 0) return Status::Ok();
  if (k == 0) {
    FillChannels(y->data_as<float>(), m, n, 1, bias, relu);
    return Status::Ok();
  }
  MatmulProblem p{{m, k}, {k, n}, {m, n}, /*transposed_weights=*/true, with_bias, relu};
  std::vector<void*> buffers = {x->data(), w->data()};
  if (bias != nullptr) buffers.push_back(bias->data());
  buffers.push_back(y->data());
  return RunMatmul(fn, p, std::move(buffers));
}

// The batch dims of a matmul as oneDNN gets them: dims where A is 1 dropped, neighbours that
// both broadcast B (or both do not) merged, and broadcast dims next to M folded into it
// (those rows of A are contiguous and share one B). Fewer dims, bigger GEMMs, and any rank.
void CollapseBatch(std::span<const int64_t> a_batch, std::span<const int64_t> b_batch, Dims* src_batch,
                   Dims* weights_batch, int64_t* rows) {
  bool last_broadcast = false;
  for (size_t i = 0; i < a_batch.size(); ++i) {
    if (a_batch[i] == 1) continue;
    const bool broadcast = b_batch.empty() || b_batch[i] == 1;
    if (!src_batch->empty() && broadcast == last_broadcast) {
      src_batch->back() *= a_batch[i];
      if (!broadcast) weights_batch->back() *= a_batch[i];
    } else {
      src_batch->push_back(a_batch[i]);
      weights_batch->push_back(broadcast ? 1 : a_batch[i]);
    }
    last_broadcast = broadcast;
  }
  if (!src_batch->empty() && last_broadcast) {
    *rows *= src_batch->back();
    src_batch->pop_back();
    weights_batch->pop_back();
  }
}

Status Matmul(const vm::Value* const* args, int32_t num_args) {
  MatmulArgs mm;
  STRATA_RETURN_IF_ERROR(GetMatmulArgs(kMatmul, args, num_args, &mm));
  vm::Tensor *a = mm.a, *b = mm.b, *c = mm.c;
  const size_t ra = a->shape().size(), rb = b->shape().size();
  const int64_t m = mm.m, k = mm.k, n = mm.n;
  const auto a_batch = a->shape().first(ra - 2);
  const auto b_batch = b->shape().first(rb - 2);
  if (rb > 2) {
    bool ok = rb == ra;
    for (size_t i = 0; ok && i < b_batch.size(); ++i) ok = b_batch[i] == a_batch[i] || b_batch[i] == 1;
    if (!ok) {
      return Status(ErrorStatus() << kMatmul << ": batch dimensions differ: A is " << vm::ShapeToString(a->shape())
                                  << " and B is " << vm::ShapeToString(b->shape())
                                  << " (a batched B must have A's rank, each batch dimension equal to A's or 1)");
    }
  }
  STRATA_RETURN_IF_ERROR(CheckMatmulOutput(kMatmul, mm, a_batch));
  if (c->num_elements() == 0) return Status::Ok();
  if (k == 0) {
    FillChannels(c->data_as<float>(), c->num_elements(), 1, 1, nullptr, false);
    return Status::Ok();
  }
  Dims src_batch, weights_batch;
  int64_t rows = m;
  CollapseBatch(a_batch, b_batch, &src_batch, &weights_batch, &rows);
  if (src_batch.size() + 2 > DNNL_MAX_NDIMS) {
    return Status(ErrorStatus() << kMatmul << ": A " << vm::ShapeToString(a->shape()) << " and B "
                                << vm::ShapeToString(b->shape()) << " still have " << src_batch.size()
                                << " batch dimensions after merging neighbours; oneDNN takes at most "
                                << DNNL_MAX_NDIMS - 2);
  }
  MatmulProblem p;
  p.src = src_batch;
  p.weights = weights_batch;
  p.dst = src_batch;
  p.src.insert(p.src.end(), {rows, k});
  p.weights.insert(p.weights.end(), {k, n});
  p.dst.insert(p.dst.end(), {rows, n});
  return RunMatmul(kMatmul, p, {a->data(), b->data(), c->data()});
}

// ---- conv2d --------------------------------------------------------------------

struct ConvProblem {
  int64_t n, c, h, w, o, kh, kw, oh, ow, groups;
  std::span<const int64_t> strides, padding, dilation;
  bool bias, relu;
};

Primitive MakeConv(const ConvProblem& p) {
  using tag = memory::format_tag;
  const memory::data_type f32 = memory::data_type::f32;
  const Dims src_dims = {p.n, p.c, p.h, p.w}, dst_dims = {p.n, p.o, p.oh, p.ow};
  const Dims weights_dims =
      p.groups == 1 ? Dims{p.o, p.c, p.kh, p.kw} : Dims{p.groups, p.o / p.groups, p.c / p.groups, p.kh, p.kw};
  const memory::desc src(src_dims, f32, tag::nchw), dst(dst_dims, f32, tag::nchw);
  // goihw over (O, C/groups, KH, KW) is the same memory: O = groups * (O / groups).
  const memory::desc weights(weights_dims, f32, p.groups == 1 ? tag::oihw : tag::goihw);
  const memory::desc bias = p.bias ? memory::desc(Dims{p.o}, f32, tag::x) : memory::desc();
  // `any`: oneDNN's blocked layouts beat plain NCHW about 2x on small CNN layers, reorders included.
  const memory::desc src_any(src_dims, f32, tag::any), dst_any(dst_dims, f32, tag::any),
      weights_any(weights_dims, f32, tag::any);
  const Dims strides(p.strides.begin(), p.strides.end());
  const Dims dilates = {p.dilation[0] - 1, p.dilation[1] - 1};  // oneDNN counts the gaps
  const Dims pad_l = {p.padding[0], p.padding[1]}, pad_r = {p.padding[2], p.padding[3]};
  const auto kind = dnnl::prop_kind::forward_inference;
  const auto algo = dnnl::algorithm::convolution_direct;
  const dnnl::convolution_forward::desc desc =
      p.bias
          ? dnnl::convolution_forward::desc(kind, algo, src_any, weights_any, bias, dst_any, strides, dilates, pad_l,
                                            pad_r)
          : dnnl::convolution_forward::desc(kind, algo, src_any, weights_any, dst_any, strides, dilates, pad_l, pad_r);
  const dnnl::convolution_forward::primitive_desc pd(desc, UserScratchpadAttr(p.relu), Engine());
  Primitive prim{dnnl::convolution_forward(pd), pd.scratchpad_desc(), {}};
  prim.operands.push_back(MakeOperand(DNNL_ARG_SRC, src, pd.src_desc(), false));
  prim.operands.push_back(MakeOperand(DNNL_ARG_WEIGHTS, weights, pd.weights_desc(), false));
  if (p.bias) prim.operands.push_back(MakeOperand(DNNL_ARG_BIAS, bias, pd.bias_desc(), false));
  prim.operands.push_back(MakeOperand(DNNL_ARG_DST, dst, pd.dst_desc(), true));
  return prim;
}

// OH (d = 0) or OW (d = 1) by the conv2d rule; an error when it would be below 1 (the dilated
// window does not fit the padded input).
Status ConvOutputDim(const char* fn, const vm::Tensor* x, const vm::Tensor* wt, int d, std::span<const int64_t> strides,
                     std::span<const int64_t> padding, std::span<const int64_t> dilation, int64_t* out_dim) {
  const int64_t in = x->shape()[2 + d], k = wt->shape()[2 + d], stride = strides[d];
  // 128 bits: the attributes are arbitrary int64s.
  const __int128 room =
      static_cast<__int128>(in) + padding[d] + padding[d + 2] - static_cast<__int128>(dilation[d]) * (k - 1) - 1;
  const __int128 out = (room >= 0 ? room / stride : -((-room + stride - 1) / stride)) + 1;  // floor division
  const char* what = d == 0 ? "height" : "width";
  if (out < 1) {
    return Status(ErrorStatus() << fn << ": X " << vm::ShapeToString(x->shape())
                                << " is too small for the kernel of Wt " << vm::ShapeToString(wt->shape())
                                << " with padding " << vm::ShapeToString(padding) << " and dilation "
                                << vm::ShapeToString(dilation) << ": the output " << what << " would be "
                                << static_cast<int64_t>(std::max<__int128>(out, INT64_MIN)));
  }
  if (out > INT64_MAX) return Status(ErrorStatus() << fn << ": the output " << what << " does not fit 64 bits");
  *out_dim = static_cast<int64_t>(out);
  return Status::Ok();
}

Status Conv2d(const char* fn, const vm::Value* const* args, int32_t num_args, bool with_bias, bool relu) {
  const int32_t expected = with_bias ? 8 : 7;
  STRATA_RETURN_IF_ERROR(CheckArgCount(
      fn, num_args, expected,
      with_bias ? "X, Wt, b, strides, padding, dilation, groups, Y" : "X, Wt, strides, padding, dilation, groups, Y"));
  vm::Tensor *x, *wt, *bias = nullptr, *y;
  STRATA_RETURN_IF_ERROR(GetF32(fn, args, 0, "X", 4, 4, &x));
  STRATA_RETURN_IF_ERROR(GetF32(fn, args, 1, "Wt", 4, 4, &wt));
  if (with_bias) STRATA_RETURN_IF_ERROR(GetF32(fn, args, 2, "b", 1, 1, &bias));
  const int a = with_bias ? 3 : 2;  // the first attribute
  std::span<const int64_t> strides, padding, dilation;
  STRATA_RETURN_IF_ERROR(GetInts(fn, args, a, "strides", 2, "(height, width)", 1, &strides));
  STRATA_RETURN_IF_ERROR(GetInts(fn, args, a + 1, "padding", 4, "(top, left, bottom, right)", 0, &padding));
  STRATA_RETURN_IF_ERROR(GetInts(fn, args, a + 2, "dilation", 2, "(height, width)", 1, &dilation));
  const vm::Value& groups_value = *args[a + 3];
  if (!groups_value.is_int()) {
    return Status(ErrorStatus() << fn << ": argument groups must be an Int, got " << groups_value.Describe());
  }
  const int64_t groups = groups_value.int_value();
  if (groups < 1) return Status(ErrorStatus() << fn << ": argument groups must be positive, got " << groups);
  STRATA_RETURN_IF_ERROR(GetF32(fn, args, expected - 1, "Y", 4, 4, &y));

  const std::string x_text = vm::ShapeToString(x->shape()), wt_text = vm::ShapeToString(wt->shape());
  const int64_t c = x->shape()[1], o = wt->shape()[0];
  if (c % groups != 0) {
    return Status(ErrorStatus() << fn << ": the " << c << " input channels of X " << x_text
                                << " are not divisible by groups=" << groups);
  }
  if (o % groups != 0) {
    return Status(ErrorStatus() << fn << ": the " << o << " output channels of Wt " << wt_text
                                << " are not divisible by groups=" << groups);
  }
  if (c / groups != wt->shape()[1]) {
    return Status(ErrorStatus() << fn << ": X " << x_text << " has " << c << " channels, but Wt " << wt_text
                                << " with groups=" << groups << " expects " << groups * wt->shape()[1]);
  }
  if (bias != nullptr && bias->shape()[0] != o) {
    return Status(ErrorStatus() << fn << ": b is " << vm::ShapeToString(bias->shape()) << ", expected (" << o << ",)");
  }
  int64_t oh, ow;
  STRATA_RETURN_IF_ERROR(ConvOutputDim(fn, x, wt, 0, strides, padding, dilation, &oh));
  STRATA_RETURN_IF_ERROR(ConvOutputDim(fn, x, wt, 1, strides, padding, dilation, &ow));
  const std::vector<int64_t> want = {x->shape()[0], o, oh, ow};
  if (!std::equal(want.begin(), want.end(), y->shape().begin(), y->shape().end())) {
    return Status(ErrorStatus() << fn << ": output Y is " << vm::ShapeToString(y->shape()) << ", expected "
                                << vm::ShapeToString(want) << " for X " << x_text << " and Wt " << wt_text
                                << " with strides " << vm::ShapeToString(strides) << ", padding "
                                << vm::ShapeToString(padding) << " and dilation " << vm::ShapeToString(dilation));
  }
  STRATA_RETURN_IF_ERROR(CheckOutput(fn, "Y", y, {x, wt, bias}, with_bias ? "X, Wt and b" : "X and Wt"));
  if (y->num_elements() == 0) return Status::Ok();
  if (x->num_elements() == 0 || wt->num_elements() == 0) {  // every tap reads padding, or there are none
    FillChannels(y->data_as<float>(), want[0], o, oh * ow, bias, relu);
    return Status::Ok();
  }
  const ConvProblem p{.n = want[0],
                      .c = c,
                      .h = x->shape()[2],
                      .w = x->shape()[3],
                      .o = o,
                      .kh = wt->shape()[2],
                      .kw = wt->shape()[3],
                      .oh = oh,
                      .ow = ow,
                      .groups = groups,
                      .strides = strides,
                      .padding = padding,
                      .dilation = dilation,
                      .bias = with_bias,
                      .relu = relu};
  return Guard(fn, [&] {
    CacheKey key = {1, with_bias, relu, p.n, p.c, p.h, p.w, p.o, p.kh, p.kw, groups};
    for (auto attr : {strides, padding, dilation}) key.insert(key.end(), attr.begin(), attr.end());
    std::vector<void*> buffers = {x->data(), wt->data()};
    if (bias != nullptr) buffers.push_back(bias->data());
    buffers.push_back(y->data());
    Execute(*GetPrimitive(key, [&] { return MakeConv(p); }), buffers);
  });
}

}  // namespace

Status DnnlDense(void*, const vm::Value* const* args, int32_t num_args, vm::Value*) {
  return Dense(kDense, args, num_args, /*with_bias=*/false, /*relu=*/false);
}
Status DnnlDenseBias(void*, const vm::Value* const* args, int32_t num_args, vm::Value*) {
  return Dense(kDenseBias, args, num_args, /*with_bias=*/true, /*relu=*/false);
}
Status DnnlDenseRelu(void*, const vm::Value* const* args, int32_t num_args, vm::Value*) {
  return Dense(kDenseRelu, args, num_args, /*with_bias=*/false, /*relu=*/true);
}
Status DnnlDenseBiasRelu(void*, const vm::Value* const* args, int32_t num_args, vm::Value*) {
  return Dense(kDenseBiasRelu, args, num_args, /*with_bias=*/true, /*relu=*/true);
}

Status DnnlMatmul(void*, const vm::Value* const* args, int32_t num_args, vm::Value*) { return Matmul(args, num_args); }

Status DnnlConv2d(void*, const vm::Value* const* args, int32_t num_args, vm::Value*) {
  return Conv2d(kConv2d, args, num_args, /*with_bias=*/false, /*relu=*/false);
}
Status DnnlConv2dBias(void*, const vm::Value* const* args, int32_t num_args, vm::Value*) {
  return Conv2d(kConv2dBias, args, num_args, /*with_bias=*/true, /*relu=*/false);
}
Status DnnlConv2dRelu(void*, const vm::Value* const* args, int32_t num_args, vm::Value*) {
  return Conv2d(kConv2dRelu, args, num_args, /*with_bias=*/false, /*relu=*/true);
}
Status DnnlConv2dBiasRelu(void*, const vm::Value* const* args, int32_t num_args, vm::Value*) {
  return Conv2d(kConv2dBiasRelu, args, num_args, /*with_bias=*/true, /*relu=*/true);
}

DnnlCacheStats GetDnnlCacheStats() {
  DnnlCacheStats stats;
  {
    std::lock_guard<std::mutex> lock(cache_mutex);
    stats.entries = static_cast<int64_t>(Cache().size());
  }
  stats.hits = cache_hits.load(std::memory_order_relaxed);
  stats.misses = cache_misses.load(std::memory_order_relaxed);
  return stats;
}

void RegisterDnnlFunctions() {
  (void)vm::RegisterLibraryFunction(kDense, &DnnlDense);
  (void)vm::RegisterLibraryFunction(kDenseBias, &DnnlDenseBias);
  (void)vm::RegisterLibraryFunction(kDenseRelu, &DnnlDenseRelu);
  (void)vm::RegisterLibraryFunction(kDenseBiasRelu, &DnnlDenseBiasRelu);
  (void)vm::RegisterLibraryFunction(kMatmul, &DnnlMatmul);
  (void)vm::RegisterLibraryFunction(kConv2d, &DnnlConv2d);
  (void)vm::RegisterLibraryFunction(kConv2dBias, &DnnlConv2dBias);
  (void)vm::RegisterLibraryFunction(kConv2dRelu, &DnnlConv2dRelu);
  (void)vm::RegisterLibraryFunction(kConv2dBiasRelu, &DnnlConv2dBiasRelu);
}

namespace {
// Linking strata_kernels (whole-archive, as strata_runtime does) registers them.
[[maybe_unused]] const bool kRegisteredAtStartup = (RegisterDnnlFunctions(), true);
}  // namespace

}  // namespace strata::kernels
