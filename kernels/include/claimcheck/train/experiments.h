// The LibTorch training code under test (chapters 3, 5, 6), behind plain types so that checks stay light: one
// include for all of it. Its parts: tiny.h (chapter 3's tiny Transformer, autograd, memory and precision; chapter 6's
// seeded runs), alloc.h (the counting allocator), qwen.h (the Qwen2 decoder, LoRA and their export).
#pragma once
#include "claimcheck/train/alloc.h"
#include "claimcheck/train/qwen.h"
#include "claimcheck/train/tiny.h"
