/* The collector's floor, for bench/collect.py: read the same /proc files gpunode collect
 * reads (statm of every process to rank by RSS, then status, comm, smaps_rollup and cgroup
 * of the top 20) and print one line per top process. No JSON, no analysis: the least a
 * reader of those files must do. Build: cc -O2 -o collect_reader collect_reader.c */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define TOP 20

typedef struct { int pid; long rss; } Proc;

static long read_file(const char *path, char *buf, size_t size) {
    int fd = open(path, O_RDONLY);
    if (fd < 0) return -1;
    long total = 0, n;
    while ((n = read(fd, buf + total, size - 1 - total)) > 0) {
        total += n;
        if ((size_t)total >= size - 1) break;
    }
    close(fd);
    buf[total] = 0;
    return total;
}

static int by_rss(const void *a, const void *b) {
    long x = ((const Proc *)a)->rss, y = ((const Proc *)b)->rss;
    return (x < y) - (x > y);
}

int main(void) {
    DIR *proc = opendir("/proc");
    if (!proc) return 1;
    size_t cap = 4096, count = 0;
    Proc *procs = malloc(cap * sizeof(Proc));
    char path[64], buf[65536];
    struct dirent *e;
    while ((e = readdir(proc))) {
        if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
        snprintf(path, sizeof path, "/proc/%s/statm", e->d_name);
        if (read_file(path, buf, 256) <= 0) continue;
        long size, rss;
        if (sscanf(buf, "%ld %ld", &size, &rss) != 2) continue;
        if (count == cap) procs = realloc(procs, (cap *= 2) * sizeof(Proc));
        procs[count++] = (Proc){atoi(e->d_name), rss};
    }
    closedir(proc);
    qsort(procs, count, sizeof(Proc), by_rss);
    const char *files[] = {"status", "comm", "smaps_rollup", "cgroup"};
    for (size_t i = 0; i < count && i < TOP; i++) {
        long bytes = 0;
        for (int f = 0; f < 4; f++) {
            snprintf(path, sizeof path, "/proc/%d/%s", procs[i].pid, files[f]);
            long n = read_file(path, buf, sizeof buf);
            if (n > 0) bytes += n;
        }
        printf("%d %ld %ld\n", procs[i].pid, procs[i].rss, bytes);
    }
    printf("%zu processes\n", count);
    free(procs);
    return 0;
}
