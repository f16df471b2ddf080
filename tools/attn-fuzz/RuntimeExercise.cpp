//===- RuntimeExercise.cpp - what consumers do with runtime data -*- C++ -*-=//

#include "RuntimeExercise.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

using namespace attn::rt;
using attn_fuzz::fail;

namespace {

/// The most multiply-adds one fp64 reference may cost in the fuzzer.
constexpr double kMaxReferenceWork = 1 << 17;

double numel(const std::vector<int64_t> &shape) {
  double n = 1;
  for (int64_t d : shape)
    n *= static_cast<double>(d);
  return n;
}

const ArgInfo *named(const std::vector<ArgInfo> &args, const char *name) {
  for (const ArgInfo &a : args)
    if (a.name == name)
      return &a;
  return nullptr;
}

bool hasRank(const ArgInfo *a, size_t rank) {
  return a && a->shape.size() == rank;
}

double sdpaWork(const std::vector<ArgInfo> &in) {
  if (in.size() < 3 || !hasRank(&in[0], 4) || !hasRank(&in[1], 4) ||
      !hasRank(&in[2], 4))
    return INFINITY;
  const auto &q = in[0].shape, &k = in[1].shape, &v = in[2].shape;
  // B * Hq * Tq rows, Tk keys each, D + Dv per key.
  return numel(q) / static_cast<double>(q[3]) * static_cast<double>(k[2]) *
         static_cast<double>(q[3] + v[3]);
}

double mhaWork(const EntryInfo &e) {
  const ArgInfo *x = named(e.inputs, "x"), *kv = named(e.inputs, "kv");
  const ArgInfo *wq = named(e.inputs, "wq"), *wk = named(e.inputs, "wk"),
                *wv = named(e.inputs, "wv"), *wo = named(e.inputs, "wo");
  const ArgInfo *src = kv ? kv : x;
  if (!hasRank(x, 3) || !hasRank(src, 3) || !hasRank(wq, 2) ||
      !hasRank(wk, 2) || !hasRank(wv, 2) || !hasRank(wo, 2) || e.op.heads < 1 ||
      e.op.kvHeads < 1)
    return INFINITY;
  double b = x->shape[0], t = x->shape[1], s = src->shape[1];
  double d = static_cast<double>(wq->shape[1] / e.op.heads);
  double dv = static_cast<double>(wv->shape[1] / e.op.kvHeads);
  double projections =
      b * t * numel(wq->shape) + b * s * (numel(wk->shape) + numel(wv->shape));
  return projections + b * e.op.heads * t * s * (d + dv) +
         b * t * numel(wo->shape);
}

/// An upper bound of the multiply-adds of the entry's fp64 reference;
/// infinite for an entry with named (dynamic) dimensions, whose inputs
/// have no size until they are resolved.
double referenceWork(const EntryInfo &e) {
  for (const ArgInfo &a : e.inputs)
    for (int64_t d : a.shape)
      if (d < 0)
        return INFINITY;
  if (e.op.kind == "sdpa")
    return sdpaWork(e.inputs);
  if (e.op.kind == "mha")
    return mhaWork(e);
  if (e.op.kind == "softmax" && !e.inputs.empty())
    return 3 * numel(e.inputs[0].shape);
  return INFINITY;
}

std::string listing(const EntryInfo &e, const std::string &target) {
  std::string s = "entry " + e.name + " (" + e.op.kind + ")\n";
  for (const auto *args : {&e.inputs, &e.outputs})
    for (const ArgInfo &a : *args)
      s += "  " + a.name + " " + dtypeName(a.dtype) + " " +
           formatShape(a.shape) + "\n";
  if (target != "cuda")
    return s;
  for (size_t i = 0; i < e.scratchBytes.size(); ++i)
    s += "  buffer " + formatScratch(e, i) + "\n";
  for (const KernelInfo &k : e.kernels) {
    s += "  kernel " + k.name + " " + k.format + " " +
         std::to_string(k.imageSize) + " " +
         formatGrid(k) + " " + std::to_string(k.block[0]) + " args " +
         formatKernelArgs(k) + "\n";
  }
  return s;
}

Tensor zeros(const ArgInfo &a) {
  Tensor t;
  t.dtype = a.dtype;
  t.shape = a.shape;
  t.data.resize(static_cast<size_t>(t.numElements()) * dtypeSize(t.dtype));
  return t;
}

/// The reference of `e` on seeded inputs, rounded to the outputs' dtypes,
/// must pass --check (its error is at most the rounding it allows).
void checkReference(const EntryInfo &e, const std::string &what) {
  InputGenerator random(e.name.size());
  std::vector<Tensor> inputs;
  for (const ArgInfo &a : e.inputs)
    inputs.push_back(random.make(a, e));
  std::vector<std::vector<double>> ref;
  if (Error err = reference(e, inputs, ref))
    return;
  if (ref.size() != e.outputs.size())
    fail("the reference computes " + std::to_string(ref.size()) +
             " outputs, the metadata declares " +
             std::to_string(e.outputs.size()),
         what);
  std::vector<Tensor> outputs;
  for (size_t o = 0; o < ref.size(); ++o) {
    outputs.push_back(zeros(e.outputs[o]));
    Tensor &t = outputs.back();
    if (ref[o].size() != static_cast<size_t>(t.numElements()))
      fail("the reference's output " + e.outputs[o].name + " has " +
               std::to_string(ref[o].size()) + " elements, the metadata " +
               formatShape(t.shape),
           what);
    for (int64_t i = 0; i < t.numElements(); ++i)
      t.set(i, ref[o][i]);
  }
  std::vector<CheckResult> results;
  if (Error err = checkOutputs(e, inputs, outputs, results))
    fail("checkOutputs fails where reference succeeds: " + err.message, what);
  for (size_t o = 0; o < results.size(); ++o)
    if (!results[o].ok)
      fail("the reference rounded to the output type fails --check: " +
               formatCheck(e.outputs[o].name, results[o]),
           what);
}

} // namespace

void attn_fuzz::fail(const std::string &what, const std::string &detail) {
  std::fprintf(stderr, "attn-fuzz: invariant broken: %s\n%s\n", what.c_str(),
               detail.c_str());
  std::abort();
}

void attn_fuzz::exerciseEntries(const std::vector<EntryInfo> &entries,
                                const std::string &target) {
  for (const EntryInfo &e : entries) {
    std::string what = listing(e, target);
    if (target != "cpu" || e.op.kind.empty() ||
        !(referenceWork(e) <= kMaxReferenceWork))
      continue;
    checkReference(e, what);
  }
}

//===----------------------------------------------------------------------===//
// Tensors
//===----------------------------------------------------------------------===//

namespace {

/// set(i, get(i)) keeps the bits of every element but NaNs (and bools,
/// which set() normalizes to 0 or 1).
void checkSetGet(const Tensor &t, const std::vector<double> &values) {
  if (t.dtype == DType::Bool)
    return;
  Tensor copy = t;
  for (size_t i = 0; i < values.size(); ++i)
    if (!std::isnan(values[i]))
      copy.set(static_cast<int64_t>(i), values[i]);
  if (copy.data != t.data)
    fail("Tensor::set(i, get(i)) changes an element",
         std::string(dtypeName(t.dtype)) + " " + formatShape(t.shape));
}

void checkNpyRoundTrip(const Tensor &t, const std::string &scratch) {
  std::string what =
      std::string(dtypeName(t.dtype)) + " " + formatShape(t.shape);
  if (Error e = writeNpy(scratch, t))
    fail("writeNpy fails on a tensor readNpy accepted: " + e.message, what);
  Tensor back;
  if (Error e = readNpy(scratch, back))
    fail("readNpy rejects what writeNpy wrote: " + e.message, what);
  if (back.dtype != t.dtype || back.shape != t.shape || back.data != t.data)
    fail("a writeNpy/readNpy round trip changes the tensor",
         what + " -> " + dtypeName(back.dtype) + " " + formatShape(back.shape));
}

} // namespace

void attn_fuzz::exerciseTensor(const Tensor &t, const std::string &scratch) {
  std::string what =
      std::string(dtypeName(t.dtype)) + " " + formatShape(t.shape);
  int64_t n = t.numElements();
  if (n < 0 || static_cast<uint64_t>(n) * dtypeSize(t.dtype) != t.data.size())
    fail("numElements() * dtypeSize() is not the size of the data read (" +
             std::to_string(t.data.size()) + " bytes)",
         what);
  std::vector<double> values(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    values[i] = t.get(i);
  checkSetGet(t, values);
  CheckResult self = compare(t, values, &values);
  if (!self.ok || self.maxError != 0)
    fail("compare() of a tensor with its own values fails", what);
  if (t.data.size() <= (1u << 20))
    checkNpyRoundTrip(t, scratch);
}
