/* Counts the deliveries of SIGUSR1 (t_agent): its handler runs once a delivery, where
 * Python's runs once for the deliveries that came while its main thread was busy, which
 * hid double deliveries. Creates argv[1] once the handler is in place, prints the count
 * half a second after the first (10 s at most). */
#include <signal.h>
#include <stdio.h>
#include <unistd.h>
static volatile sig_atomic_t n;
static void h(int s)
{
	(void)s;
	n++;
}
int main(int argc, char **argv)
{
	struct sigaction sa = {.sa_handler = h};
	sigaction(SIGUSR1, &sa, NULL);
	if (argc > 1) {
		FILE *f = fopen(argv[1], "w");
		if (f)
			fclose(f);
	}
	for (int i = 0; i < 1000 && !n; i++)
		usleep(10000);
	for (int i = 0; i < 50; i++)
		usleep(10000);
	printf("%d\n", (int)n);
	return 0;
}
