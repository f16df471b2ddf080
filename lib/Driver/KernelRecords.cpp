//===- KernelRecords.cpp - the device records of CUDA artifacts -*- C++ -*-===//
//
// After the GPU pipeline, each public function's host code is a straight
// sequence of device buffer allocations and kernel launches; this unit
// describes it for the runtime to replay (Artifact/Format.h): a `buffer`
// record per allocation (bytes, times dynamic dimensions by name) and a
// `kernel` record per launch (grid as constants or dimension expressions,
// block, shared memory, arguments, image). What the runtime could not
// replay is refused with a diagnostic at the op.
//
//===----------------------------------------------------------------------===//

#include "Internal.h"
#include "attn-mlir/Artifact/Format.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Matchers.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace mlir::attn::driver;
using mlir::attn::EntryRecords;

static std::optional<int64_t> constantInt(Value v) {
  APInt value;
  if (v && matchPattern(v, m_ConstantInt(&value)))
    return value.getSExtValue();
  return std::nullopt;
}

using ::attn::format::kMaxBuffers;
using ::attn::format::kMaxKernels;

/// The name of host value `v` when it is a dynamic dimension of an entry
/// argument (memref.dim; `argDims` names them, per argument and
/// dimension), else "".
static std::string dimName(Value v,
                           ArrayRef<std::vector<std::string>> argDims) {
  auto dim = v.getDefiningOp<memref::DimOp>();
  auto arg = dim ? dyn_cast<BlockArgument>(dim.getSource()) : BlockArgument();
  std::optional<int64_t> d = dim ? dim.getConstantIndex() : std::nullopt;
  if (!arg || !d || arg.getArgNumber() >= argDims.size() ||
      static_cast<size_t>(*d) >= argDims[arg.getArgNumber()].size())
    return "";
  return argDims[arg.getArgNumber()][*d];
}

/// How a kernel record names grid size `v` (see Artifact/Format.h): "N"
/// for a positive constant, "NAME" for a dynamic dimension, "NAME/N" for
/// its ceiling division by a constant, either plus a dynamic dimension or
/// a constant ("NAME/N+NAME2", "NAME+N2"); "" for anything else.
static std::string
describeGridSize(Value v, ArrayRef<std::vector<std::string>> argDims) {
  if (auto add = v.getDefiningOp<arith::AddIOp>()) {
    Value x = add.getLhs(), y = add.getRhs();
    if (constantInt(x))
      std::swap(x, y);
    std::string lhs = constantInt(x) ? "" : describeGridSize(x, argDims);
    std::optional<int64_t> c = constantInt(y);
    std::string rhs =
        c ? (*c >= 0 ? std::to_string(*c) : "") : dimName(y, argDims);
    return !lhs.empty() && !rhs.empty() && lhs.find('+') == std::string::npos
               ? lhs + "+" + rhs
               : "";
  }
  if (auto c = constantInt(v))
    return *c >= 1 ? std::to_string(*c) : "";
  if (auto div = v.getDefiningOp<arith::CeilDivUIOp>()) {
    std::string name = dimName(div.getLhs(), argDims);
    auto by = constantInt(div.getRhs());
    return !name.empty() && by && *by >= 1 ? name + "/" + std::to_string(*by)
                                           : "";
  }
  return dimName(v, argDims);
}

/// The `kernel` record of `launch`, whose operands are the buffers `ids`
/// and sizes of the entry arguments (named by `argDims`).
static LogicalResult describeLaunch(gpu::LaunchFuncOp launch,
                                    const DenseMap<Value, int64_t> &ids,
                                    ArrayRef<std::vector<std::string>> argDims,
                                    Images &images, llvm::raw_ostream &os) {
  SmallVector<std::string> grid;
  for (Value v :
       {launch.getGridSizeX(), launch.getGridSizeY(), launch.getGridSizeZ()}) {
    if (constantInt(v) && *constantInt(v) < 1)
      return launch.emitError("a kernel of the CUDA entry has an empty "
                              "launch: empty tensors are not supported");
    grid.push_back(describeGridSize(v, argDims));
    if (grid.back().empty())
      return launch.emitError(
          "a grid size must be a constant, or a dynamic dimension of an "
          "entry argument (maybe divided by a constant, maybe plus another "
          "dynamic dimension or a constant)");
  }
  SmallVector<int64_t> block;
  for (Value v : {launch.getBlockSizeX(), launch.getBlockSizeY(),
                  launch.getBlockSizeZ()}) {
    auto c = constantInt(v);
    if (!c || *c < 1)
      return launch.emitError("the block size must be a positive constant");
    block.push_back(*c);
  }
  std::optional<int64_t> smem = 0;
  if (Value s = launch.getDynamicSharedMemorySize())
    smem = constantInt(s);
  if (!smem)
    return launch.emitError("the shared memory size must be constant");
  std::string args;
  for (Value operand : launch.getKernelOperands()) {
    auto it = ids.find(operand);
    std::string arg = it != ids.end() ? std::to_string(it->second)
                                      : dimName(operand, argDims);
    if (arg.empty())
      return launch.emitError("kernel operands must be entry arguments, "
                              "device buffers of the host code, or dynamic "
                              "dimensions of entry arguments");
    args += (args.empty() ? "" : ",") + arg;
  }
  auto binary = SymbolTable::lookupNearestSymbolFrom<gpu::BinaryOp>(
      launch, launch.getKernelModuleName());
  if (!binary || binary.getObjects().size() != 1)
    return launch.emitError("no serialized kernel (gpu.binary) for ")
           << launch.getKernelModuleName();
  auto &[symbol, bytes] = images.symbolsAndBytes[images.of(binary)];
  os << "kernel " << launch.getKernelName().getValue() << " grid=" << grid[0]
     << "," << grid[1] << "," << grid[2] << " block=" << block[0] << ","
     << block[1] << "," << block[2] << " smem=" << *smem << " args=" << args
     << " image=" << symbol << " format=" << (images.ptx ? "ptx" : "cubin")
     << " size=" << bytes.size() << "\n";
  return success();
}

/// The device records of every public function after the GPU pipeline, in
/// the order the runtime replays them: `buffer` per memref.alloc (buffer ids
/// after the arguments; reshapes alias their source) and `kernel` per
/// gpu.launch_func (see Artifact/Format.h).
LogicalResult mlir::attn::driver::describeKernels(
    ModuleOp module, ArrayRef<EntryRecords> entries,
    std::map<std::string, std::string> &lines, Images &images) {
  for (auto func : module.getOps<func::FuncOp>()) {
    if (func.isPrivate() || func.isExternal())
      continue;
    const EntryRecords *entry =
        llvm::find_if(entries, [&](const EntryRecords &e) {
          return e.name == func.getName();
        });
    if (entry == entries.end())
      return func.emitError("no metadata for this entry");
    DenseMap<Value, int64_t> ids;
    for (BlockArgument a : func.getArguments())
      ids[a] = a.getArgNumber();
    int64_t next = func.getNumArguments();
    size_t buffers = 0, kernels = 0;
    std::string text;
    llvm::raw_string_ostream os(text);
    for (Operation &op : func.getBody().front()) {
      if (auto alloc = dyn_cast<memref::AllocOp>(op)) {
        // Static bytes, times the dynamic sizes by name (bytes=N*B*Tq).
        MemRefType t = alloc.getType();
        int64_t bytes = std::max<int64_t>(1, t.getElementTypeBitWidth() / 8);
        for (int64_t d : t.getShape())
          bytes *= ShapedType::isDynamic(d) ? 1 : d;
        std::string names;
        for (Value size : alloc.getDynamicSizes()) {
          std::string name = dimName(size, entry->dimNames);
          if (name.empty())
            return alloc.emitError("a device buffer of the CUDA entry is "
                                   "sized by something other than the "
                                   "dimensions of its arguments");
          names += "*" + name;
        }
        if (bytes == 0)
          return alloc.emitError("an intermediate tensor of the CUDA entry is "
                                 "empty: empty tensors are not supported");
        if (++buffers > kMaxBuffers)
          return func.emitError("the CUDA entry needs more than ")
                 << kMaxBuffers
                 << " device scratch buffers, the most an artifact "
                    "describes: split the graph into several functions";
        ids[alloc] = next++;
        os << "buffer bytes=" << bytes << names << "\n";
      } else if (isa<memref::ExpandShapeOp, memref::CollapseShapeOp,
                     memref::ReinterpretCastOp>(op)) {
        auto it = ids.find(op.getOperand(0));
        if (it == ids.end())
          return op.emitError("a reshape of a buffer the host code did not "
                              "make");
        ids[op.getResult(0)] = it->second;
      } else if (auto launch = dyn_cast<gpu::LaunchFuncOp>(op)) {
        if (++kernels > kMaxKernels)
          return func.emitError("the CUDA entry launches more than ")
                 << kMaxKernels
                 << " kernels, the most an artifact describes: split the "
                    "graph into several functions";
        if (failed(describeLaunch(launch, ids, entry->dimNames, images, os)))
          return failure();
      } else if (!isa<arith::ConstantOp, func::ReturnOp, memref::DimOp,
                      arith::CeilDivUIOp, arith::AddIOp>(op)) {
        // (Sizes are kept: describeLaunch checks the grids made of them.)
        return op.emitError("unexpected host op after the GPU pipeline");
      }
    }
    lines[func.getName().str()] = text;
  }
  return success();
}
