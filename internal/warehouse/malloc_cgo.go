//go:build linux && cgo

package warehouse

/*
#include <features.h>
#include <malloc.h>
#include <stddef.h>
#include <stdint.h>

// ditto_mallinfo fills out with glibc's account of its heap (every arena and the blocks it
// mapped on its own): [0] bytes held from the OS, [1] bytes in use, [2] bytes free in the
// arenas. It returns 0 where the C library is not glibc 2.33 or later (no mallinfo2).
static int ditto_mallinfo(size_t out[3]) {
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 33))
	struct mallinfo2 m = mallinfo2();
	out[0] = m.arena + m.hblkhd;
	out[1] = m.uordblks + m.hblkhd;
	out[2] = m.fordblks;
	return 1;
#else
	return 0;
#endif
}

// DuckDB's Linux builds link jemalloc with its symbols prefixed (DuckDB's allocator for its
// own memory, the buffer manager's blocks and everything else); weak, so that a build without
// it links and reads nothing.
extern int duckdb_je_mallctl(const char *name, void *oldp, size_t *oldlenp, void *newp, size_t newlen) __attribute__((weak));

// ditto_jemalloc fills out with jemalloc's stats.allocated, stats.active, stats.resident and
// stats.retained, after refreshing them; it returns 0 where DuckDB has no jemalloc.
static int ditto_jemalloc(size_t out[4]) {
	if (!duckdb_je_mallctl) {
		return 0;
	}
	uint64_t epoch = 1;
	size_t len = sizeof(epoch);
	if (duckdb_je_mallctl("epoch", &epoch, &len, &epoch, len) != 0) {
		return 0;
	}
	static const char *names[4] = {"stats.allocated", "stats.active", "stats.resident", "stats.retained"};
	for (int i = 0; i < 4; i++) {
		size_t v = 0;
		len = sizeof(v);
		if (duckdb_je_mallctl(names[i], &v, &len, NULL, 0) != 0) {
			return 0;
		}
		out[i] = v;
	}
	return 1;
}

// ditto_release returns the free memory both allocators hold to the OS: jemalloc purges the
// dirty pages of every arena (MALLCTL_ARENAS_ALL is 4096), glibc trims every arena.
static void ditto_release(void) {
	if (duckdb_je_mallctl) {
		duckdb_je_mallctl("arena.4096.purge", NULL, NULL, NULL, 0);
	}
#if defined(__GLIBC__)
	malloc_trim(0);
#endif
}

*/
import "C"

// readMalloc reads glibc's account of its heap, where the events' Arrow records and other C
// code allocate: what it holds from the OS, what is in use, what is free in its arenas.
func readMalloc() (held, inUse, free uint64, ok bool) {
	var out [3]C.size_t
	if C.ditto_mallinfo(&out[0]) == 0 {
		return 0, 0, 0, false
	}
	return uint64(out[0]), uint64(out[1]), uint64(out[2]), true
}

// readJemalloc reads the account of DuckDB's allocator, jemalloc, where DuckDB has it (its
// Linux builds): bytes allocated, in active pages, resident, and retained (mapped, not resident).
func readJemalloc() (allocated, active, resident, retained uint64, ok bool) {
	var out [4]C.size_t
	if C.ditto_jemalloc(&out[0]) == 0 {
		return 0, 0, 0, 0, false
	}
	return uint64(out[0]), uint64(out[1]), uint64(out[2]), uint64(out[3]), true
}

// releaseFreeMemory returns to the OS the pages that DuckDB's allocator (jemalloc) and glibc's
// heap hold free (see releaseAfterCommit).
func releaseFreeMemory() { C.ditto_release() }
