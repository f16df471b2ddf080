//===- AttnOps.h - attn dialect ops -----------------------------*- C++ -*-===//

#ifndef ATTN_MLIR_DIALECT_ATTN_IR_ATTNOPS_H
#define ATTN_MLIR_DIALECT_ATTN_IR_ATTNOPS_H

#include "attn-mlir/Dialect/Attn/IR/AttnDialect.h"
#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "attn-mlir/Dialect/Attn/IR/AttnEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "attn-mlir/Dialect/Attn/IR/AttnAttrs.h.inc"

#define GET_OP_CLASSES
#include "attn-mlir/Dialect/Attn/IR/AttnOps.h.inc"

#endif // ATTN_MLIR_DIALECT_ATTN_IR_ATTNOPS_H
