/*
 * cli/progress.c - the progress bar `kvfs import` (a document or JSON
 * Lines) draws on stderr when stderr is a terminal: bytes, rate, rows
 * when counted, and the time left; nothing at all otherwise.
 */
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"

#define MIB (1024.0 * 1024.0)
#define PROGRESS_REDRAW_S 0.2

static double progress_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void cli_progress_start(struct cli_progress *pr, uint64_t total)
{
	pr->show = isatty(STDERR_FILENO);
	pr->drawn = false;
	pr->total = total;
	pr->start = progress_now();
	pr->last = pr->start - PROGRESS_REDRAW_S;
}

void cli_progress_draw(struct cli_progress *pr, uint64_t bytes, int64_t rows, bool force)
{
	double t = progress_now(), secs = t - pr->start;
	double rate = secs > 0 ? (double)bytes / MIB / secs : 0;
	char left[32] = "", count[64] = "";

	if (!pr->show || (!force && t - pr->last < PROGRESS_REDRAW_S))
		return;
	pr->last = t;
	if (pr->total && bytes > pr->total)
		bytes = pr->total;
	if (pr->total && bytes > 0 && secs > 0) {
		double rest = secs * (double)(pr->total - bytes) / (double)bytes;

		snprintf(left, sizeof(left), ", %d:%02d left", (int)(rest / 60), (int)rest % 60);
	}
	if (rows >= 0)
		snprintf(count, sizeof(count), ", %lld rows, %.0f rows/s", (long long)rows,
			 secs > 0 ? (double)rows / secs : 0);
	if (pr->total)
		fprintf(stderr, "\rimport: %d%% (%.1f MiB of %.1f MiB), %.1f MiB/s%s%s   ",
			(int)(bytes * 100 / pr->total), (double)bytes / MIB,
			(double)pr->total / MIB, rate, count, left);
	else
		fprintf(stderr, "\rimport: %.1f MiB, %.1f MiB/s%s   ", (double)bytes / MIB, rate,
			count);
	fflush(stderr);
	pr->drawn = true;
}

void cli_progress_end(struct cli_progress *pr)
{
	if (pr->drawn)
		fputc('\n', stderr);
	pr->drawn = false;
}
