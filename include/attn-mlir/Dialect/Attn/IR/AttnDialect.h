//===- AttnDialect.h - attn dialect -----------------------------*- C++ -*-===//

#ifndef ATTN_MLIR_DIALECT_ATTN_IR_ATTNDIALECT_H
#define ATTN_MLIR_DIALECT_ATTN_IR_ATTNDIALECT_H

#include "mlir/IR/Dialect.h"

#include "attn-mlir/Dialect/Attn/IR/AttnOpsDialect.h.inc"

#endif // ATTN_MLIR_DIALECT_ATTN_IR_ATTNDIALECT_H
