/* libFuzzer target: the ir reader on arbitrary bytes, and every case
 * it accepts through attribute/shape resolution (fuzz_common.h). */
#include <stddef.h>
#include <stdint.h>

#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    cf_read_ir_buffer("fuzz-input", (const char *)data, size, &fuzz_sink);
    return 0;
}
