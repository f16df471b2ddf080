//===- MemoryOps.cpp - vector and memref ops, emulated ----------*- C++ -*-===//
//
// The semantics of the ops that move data: vector extract, from_elements,
// the bf16 bitcast and store; the dynamic shared memory, memref views of
// it and of flat buffers, loads and stores, each access checked against
// its buffer and against the shared-memory hazards.
//
//===----------------------------------------------------------------------===//

#include "KernelEmulator.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "llvm/ADT/TypeSwitch.h"

namespace mlir {
namespace attn {
namespace emu {

bool KernelEmulator::runVector(Operation *op, const std::vector<char> &mask) {
  return TypeSwitch<Operation *, bool>(op)
      .Case([&](vector::ExtractOp e) {
        auto src = cast<VectorType>(e.getSource().getType());
        SmallVector<int64_t> pos(e.getStaticPosition());
        int64_t width = 1;
        for (int64_t d = pos.size(); d < src.getRank(); ++d)
          width *= src.getDimSize(d);
        int64_t lin = 0;
        for (auto [k, p] : llvm::enumerate(pos))
          lin = lin * src.getDimSize(k) + p;
        lin *= width;
        bool intSrc = src.getElementType().isInteger(32);
        Val *res = row(e), *in = row(e.getSource());
        forEach(mask, [&](int64_t t) {
          Val r;
          if (intSrc)
            r.i = in[t].i;
          else
            for (int64_t k = 0; k < width; ++k)
              r.f[k] = in[t].f[lin + k];
          res[t] = r;
        });
        return true;
      })
      .Case([&](vector::FromElementsOp fe) {
        SmallVector<Val *> elems;
        for (Value v : fe.getElements())
          elems.push_back(row(v));
        Val *res = row(fe);
        forEach(mask, [&](int64_t t) {
          Val r;
          for (auto [k, in] : llvm::enumerate(elems))
            r.f[k] = in[t].f[0];
          res[t] = r;
        });
        return true;
      })
      .Case([&](vector::BitCastOp bc) {
        if (!bc.getSourceVectorType().getElementType().isBF16())
          return fail("unsupported bitcast"), true;
        forEach(mask, [&](int64_t t) {
          const Val &s = at(bc.getSource(), t);
          at(bc, t).i =
              static_cast<int64_t>(bf16Bits(s.f[0]) | (bf16Bits(s.f[1]) << 16));
        });
        return true;
      })
      .Case([&](vector::StoreOp st) {
        int64_t n = st.getVectorType().getNumElements();
        forEach(mask, [&](int64_t t) {
          const View &v = view(st.getBase(), t);
          int64_t l = v.linear(indices(st.getIndices(), t));
          for (int64_t k = 0; k < n; ++k) {
            sharedWrite(t, v.at(l + k), v.size());
            fromFloat(v.elt, at(st.getValueToStore(), t).f[k], v.at(l + k));
          }
        });
        return true;
      })
      .Default([](Operation *) { return false; });
}

bool KernelEmulator::runMemory(Operation *op, const std::vector<char> &mask) {
  return TypeSwitch<Operation *, bool>(op)
      .Case([&](gpu::DynamicSharedMemoryOp dyn) {
        forEach(mask, [&](int64_t t) { at(dyn, t).i = -1; });
        return true;
      })
      .Case([&](memref::ViewOp vw) {
        // One handle per (op, block): every thread computes the same view.
        auto type = cast<MemRefType>(vw.getType());
        int64_t offset = -1;
        forEach(mask, [&](int64_t t) {
          int64_t o = at(vw.getByteShift(), t).i;
          if (offset == -1)
            offset = o;
          else if (o != offset)
            fail("divergent memref.view");
        });
        View v;
        v.fault = &error;
        v.base = smemView.base + offset;
        v.bytes = smemView.bytes - offset;
        v.shape.assign(type.getShape().begin(), type.getShape().end());
        v.elt = type.getElementType();
        int64_t need = v.size();
        for (int64_t n : v.shape)
          need *= n;
        if (need > v.bytes)
          return fail("memref.view beyond the shared memory"), true;
        views.push_back(v);
        int64_t h = views.size() - 1;
        forEach(mask, [&](int64_t t) { at(vw, t).i = h; });
        return true;
      })
      .Case([&](memref::ReinterpretCastOp rc) {
        // A buffer passed flat, viewed in its shape with dense strides (one
        // handle per op and block, like memref.view).
        SmallVector<int64_t> shape, strides;
        int64_t src = -2;
        forEach(mask, [&](int64_t t) {
          auto values = [&](ArrayRef<OpFoldResult> ofrs) {
            SmallVector<int64_t> r;
            for (OpFoldResult d : ofrs)
              r.push_back(isa<Value>(d) ? at(cast<Value>(d), t).i
                                        : *getConstantIntValue(d));
            return r;
          };
          SmallVector<int64_t> s = values(rc.getMixedSizes()),
                               st = values(rc.getMixedStrides());
          int64_t h = at(rc.getSource(), t).i;
          if (src == -2) {
            shape = s;
            strides = st;
            src = h;
          } else if (s != shape || st != strides || h != src) {
            fail("divergent memref.reinterpret_cast");
          }
        });
        if (src == -2 || !error.empty())
          return true;
        int64_t dense = 1;
        for (int64_t d = shape.size() - 1; d >= 0; --d) {
          if (strides[d] != dense)
            return fail("memref.reinterpret_cast with other than dense "
                        "strides"),
                   true;
          dense *= shape[d];
        }
        if (getConstantIntValue(rc.getMixedOffsets()[0]) != 0)
          return fail("memref.reinterpret_cast at an offset"), true;
        View v = viewOf(src);
        if (dense * v.size() > v.bytes)
          return fail("memref.reinterpret_cast beyond its buffer"), true;
        v.shape = shape;
        views.push_back(v);
        int64_t h = views.size() - 1;
        forEach(mask, [&](int64_t t) { at(rc, t).i = h; });
        return true;
      })
      .Case([&](memref::LoadOp ld) {
        forEach(mask, [&](int64_t t) {
          const View &v = view(ld.getMemRef(), t);
          const uint8_t *p = v.at(v.linear(indices(ld.getIndices(), t)));
          sharedRead(t, p, v.size());
          Val r;
          if (v.elt.isInteger(1)) {
            r.i = *p != 0;
          } else if (v.elt.isInteger(32)) { // a paged cache's tables
            int32_t x;
            std::memcpy(&x, p, 4);
            r.i = x;
          } else {
            r.f[0] = toFloat(v.elt, p);
          }
          at(ld, t) = r;
        });
        return true;
      })
      .Case([&](memref::DimOp dim) {
        // A score function's bound on a capture's index.
        forEach(mask, [&](int64_t t) {
          const View &v = view(dim.getSource(), t);
          int64_t d = at(dim.getIndex(), t).i;
          if (d < 0 || d >= static_cast<int64_t>(v.shape.size()))
            return fail("memref.dim of a dimension the buffer lacks");
          at(dim, t).i = v.shape[d];
        });
        return true;
      })
      .Case([&](memref::StoreOp stO) {
        forEach(mask, [&](int64_t t) {
          const View &v = view(stO.getMemRef(), t);
          sharedWrite(t, v.at(v.linear(indices(stO.getIndices(), t))),
                      v.size());
          fromFloat(v.elt, at(stO.getValueToStore(), t).f[0],
                    v.at(v.linear(indices(stO.getIndices(), t))));
        });
        return true;
      })
      .Default([](Operation *) { return false; });
}

} // namespace emu
} // namespace attn
} // namespace mlir
