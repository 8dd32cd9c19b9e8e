/* libFuzzer target for the rank-file reader: any bytes must be rejected or read without
 * crashing, hanging or reading out of bounds (build: clang -fsanitize=fuzzer,address). */
#include "config.h"
#include "rankfile.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char path[64];
	char err[256];
	gp_rf_reader_t *r;
	gp_event_t ev;
	if (!path[0])
		snprintf(path, sizeof(path), "/tmp/gp-fuzz.%d", (int)getpid());
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (fd < 0)
		return 0;
	if (write(fd, data, size) != (ssize_t)size) {
		close(fd);
		return 0;
	}
	close(fd);
	if (gp_rf_open(path, &r, err, sizeof(err)) == 0) {
		long n = 0;
		while (gp_rf_next(r, &ev) == 1 && n < 10000000)
			n++;
		gp_rf_header(r, GP_HDR_RANK);
		gp_rf_close(r);
	}
	return 0;
}
