//===- MetadataCheck.cpp - compiler metadata read by the runtime -*- C++ -*-=//

#include "MetadataCheck.h"
#include "RuntimeExercise.h"

#include "attn-mlir/Artifact/Format.h"
#include "attn-mlir/Artifact/Metadata.h"
#include "attn-mlir/Runtime/Runtime.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinTypes.h"

#include <cctype>
#include <cstdlib>
#include <map>
#include <utility>
#include <vector>

namespace rt = ::attn::rt;

namespace {

std::map<std::string, uint64_t> &rejections() {
  static auto *counts = new std::map<std::string, uint64_t>();
  return *counts;
}

/// `message` with its numbers and quoted names blanked, as a kind.
std::string kindOf(const std::string &message) {
  std::string kind;
  bool quoted = false;
  for (char c : message) {
    if (c == '\'')
      quoted = !quoted;
    if (quoted)
      continue;
    kind += std::isdigit(static_cast<unsigned char>(c)) ? '#' : c;
  }
  return kind.substr(0, 160);
}

bool strict() {
  static bool on = std::getenv("ATTN_FUZZ_STRICT_METADATA") &&
                   std::string(std::getenv("ATTN_FUZZ_STRICT_METADATA")) == "1";
  return on;
}

/// `a` (the runtime's view of an argument) describes the type `t`: its
/// sizes, rt::kDynamicDim where the tensor's dimension is dynamic.
bool sameArg(const rt::ArgInfo &a, mlir::Type t) {
  auto tensor = mlir::dyn_cast<mlir::RankedTensorType>(t);
  if (!tensor || a.shape.size() != static_cast<size_t>(tensor.getRank()))
    return false;
  for (auto [size, dim] : llvm::zip_equal(a.shape, tensor.getShape()))
    if (size != (mlir::ShapedType::isDynamic(dim) ? rt::kDynamicDim : dim))
      return false;
  mlir::Type e = tensor.getElementType();
  switch (a.dtype) {
  case rt::DType::F32:
    return e.isF32();
  case rt::DType::F16:
    return e.isF16();
  case rt::DType::BF16:
    return e.isBF16();
  case rt::DType::Bool:
    return e.isInteger(1);
  case rt::DType::I32:
    return e.isInteger(32);
  case rt::DType::I8:
    return e.isInteger(8);
  }
  return false;
}

void checkEntry(mlir::ModuleOp module, const rt::EntryInfo &e,
                const std::string &text) {
  auto f = module.lookupSymbol<mlir::func::FuncOp>(e.name);
  if (!f || e.inputs.size() != f.getNumArguments() ||
      e.outputs.size() != f.getNumResults())
    attn_fuzz::fail("the runtime reads entry '" + e.name +
                        "' with other arguments than the function has",
                    text);
  for (size_t i = 0; i < e.inputs.size(); ++i)
    if (!sameArg(e.inputs[i], f.getArgumentTypes()[i]))
      attn_fuzz::fail("input " + e.inputs[i].name + " of '" + e.name +
                          "' is read with another type",
                      text);
  for (size_t i = 0; i < e.outputs.size(); ++i)
    if (!sameArg(e.outputs[i], f.getResultTypes()[i]))
      attn_fuzz::fail("output " + e.outputs[i].name + " of '" + e.name +
                          "' is read with another type",
                      text);
}

} // namespace

void attn_fuzz::checkMetadata(mlir::ModuleOp module) {
  std::vector<mlir::attn::EntryRecords> chunks;
  if (mlir::failed(mlir::attn::describeEntries(module, chunks)))
    return;
  std::string records = std::string(::attn::format::kHeader) + "\ntarget cpu\n";
  for (const auto &chunk : chunks)
    records += chunk.text;
  std::string text = ::attn::format::seal(records);
  std::vector<rt::EntryInfo> entries;
  std::string target;
  if (rt::Error e = rt::parseMetadata(text, entries, &target)) {
    if (strict())
      fail("the runtime rejects the metadata of a verified module: " +
               e.message,
           text);
    ++rejections()[kindOf(e.message)];
    return;
  }
  if (entries.size() != chunks.size())
    fail("the runtime reads " + std::to_string(entries.size()) +
             " entries of " + std::to_string(chunks.size()),
         text);
  for (size_t i = 0; i < entries.size(); ++i) {
    if (entries[i].name != chunks[i].name)
      fail("entry " + chunks[i].name + " is read as " + entries[i].name, text);
    checkEntry(module, entries[i], text);
  }
  exerciseEntries(entries, target);
}

std::string attn_fuzz::metadataReport() {
  std::string report;
  for (const auto &[kind, count] : rejections())
    report += "  " + std::to_string(count) + "x " + kind + "\n";
  return report;
}
