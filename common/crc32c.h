/* CRC32C (Castagnoli), hardware-accelerated with SSE4.2 where the CPU has it. */
#ifndef GP_CRC32C_H
#define GP_CRC32C_H
#include <stddef.h>
#include <stdint.h>
uint32_t gp_crc32c(uint32_t crc, const void *buf, size_t len);
#endif
