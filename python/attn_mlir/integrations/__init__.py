"""attn_mlir inside other libraries: adapters that make attn_mlir's torch op
an attention backend where their users already are.

    from attn_mlir.integrations import transformers as amt
    amt.register()  # attn_implementation="attn_mlir" in Hugging Face transformers

Each adapter imports its library only when it is imported itself, so these
stay optional dependencies.
"""
