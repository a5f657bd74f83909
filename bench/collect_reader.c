/* The collector's floor, for bench/collect.py: read the files `gpunode collect` reads, in its
 * order (bot/collectors/bundle.py collect_document), and print one line per kept process. No
 * JSON, no analysis, no gap bookkeeping: the least a reader of those files must do.
 *
 *   /proc/meminfo, /proc/pressure/memory, /proc/net/sockstat, /proc/slabinfo
 *   the cgroup version (sys/fs/cgroup/cgroup.controllers, else sys/fs/cgroup/memory), the walk
 *     for kubepods cgroups and the memory files of each pod and container cgroup found
 *   /dev/nvidiactl (whether it exists: NVML is loaded only when it does)
 *   statm of every process; status, cmdline, smaps_rollup and cgroup of the TOP + SLACK
 *     largest by statm (procfs._RANK_SLACK: statm is approximate, smaps_rollup exact)
 *   /dev/kmsg to its end and /proc/stat (btime); when the open is refused, /proc/self/status
 *     (CapEff) and /proc/sys/kernel/dmesg_restrict, which word the gap
 *   the memory files of the kept processes' own cgroups (not pods', already read)
 *
 * Build: cc -O2 -o collect_reader collect_reader.c. With -DNARROW it reads only what it read
 * before it read the collector's files: statm of every process, then status, comm,
 * smaps_rollup and cgroup of the top 20 (bench/collect.py reports both). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define TOP 20
#ifdef NARROW
#define SLACK 0
#else
#define SLACK 8
#endif

typedef struct { int pid; long rss; int slot; } Proc;

static char buf[65536];

static long read_file(const char *path, char *out, size_t size) {
    int fd = open(path, O_RDONLY);
    if (fd < 0) return -1;
    long total = 0, n;
    while ((n = read(fd, out + total, size - 1 - total)) > 0) {
        total += n;
        if ((size_t)total >= size - 1) break;
    }
    close(fd);
    out[total] = 0;
    return total;
}

static int by_rss(const void *a, const void *b) {
    const Proc *x = a, *y = b;
    if (x->rss != y->rss) return (x->rss < y->rss) - (x->rss > y->rss);
    return (x->pid > y->pid) - (x->pid < y->pid);
}

#ifndef NARROW
static int version; /* 2, 1 or 0 (none) */
static char mount[64];

static void read_memory_files(const char *rel) {
    static const char *v2[] = {"memory.current", "memory.max", "memory.stat", "memory.events"};
    static const char *v1[] = {"memory.usage_in_bytes", "memory.limit_in_bytes", "memory.stat",
                               "memory.oom_control", "memory.kmem.usage_in_bytes",
                               "memory.kmem.tcp.usage_in_bytes"};
    const char **names = version == 2 ? v2 : v1;
    int count = version == 2 ? 4 : 6;
    char path[4096];
    for (int i = 0; i < count; i++) {
        snprintf(path, sizeof path, "%s%s/%s", mount, rel, names[i]);
        read_file(path, buf, sizeof buf);
    }
}

static int is_hex(const char *s, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f'))) return 0;
    return 1;
}

/* a pod cgroup's name holds "pod" then a 32-hex UID (dashes or underscores between) */
static int is_pod(const char *name) {
    const char *p = strstr(name, "pod");
    if (!p) return 0;
    size_t hex = 0;
    for (p += 3; *p && *p != '.'; p++) {
        if (*p == '-' || *p == '_') continue;
        if (!is_hex(p, 1)) return 0;
        hex++;
    }
    return hex == 32;
}

/* a container cgroup's leaf: [runtime-]64hex[.scope] */
static int is_container(const char *name) {
    const char *dash = strrchr(name, '-');
    const char *id = dash ? dash + 1 : name;
    return strlen(id) >= 64 && is_hex(id, 64) && (id[64] == 0 || !strcmp(id + 64, ".scope"));
}

typedef void (*visit)(const char *rel, const char *name, int depth);

static void subdirs(const char *rel, int depth, visit fn) {
    char path[4096];
    snprintf(path, sizeof path, "%s%s", mount, rel);
    DIR *dir = opendir(path);
    if (!dir) return;
    struct dirent *e;
    while ((e = readdir(dir)))
        if (e->d_type == DT_DIR && e->d_name[0] != '.') fn(rel, e->d_name, depth);
    closedir(dir);
}

static void container_visit(const char *rel, const char *name, int depth) {
    char child[4096];
    (void)depth;
    snprintf(child, sizeof child, "%s/%s", rel, name);
    if (is_container(name)) read_memory_files(child);
}

/* below a kubepods root: pod cgroups (and the containers right under them), 4 levels deep */
static void kube_visit(const char *rel, const char *name, int depth) {
    char child[4096];
    snprintf(child, sizeof child, "%s/%s", rel, name);
    if (is_pod(name)) {
        read_memory_files(child);
        subdirs(child, depth, container_visit);
    } else if (depth < 4) {
        subdirs(child, depth + 1, kube_visit);
    }
}

static void root_visit(const char *rel, const char *name, int depth) {
    char child[4096];
    snprintf(child, sizeof child, "%s/%s", rel, name);
    if (!strncmp(name, "kubepods", 8) || !strncmp(name, "kubelet-kubepods", 16))
        subdirs(child, 0, kube_visit);
    else if (depth < 1 && strlen(name) > 6 && !strcmp(name + strlen(name) - 6, ".slice"))
        subdirs(child, depth + 1, root_visit);
}

/* the memory cgroup of a /proc/PID/cgroup text: the v1 memory line, else the v2 "0::" one */
static const char *memory_cgroup(char *text) {
    const char *unified = NULL;
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        char *a = strchr(line, ':'), *b = a ? strchr(a + 1, ':') : NULL;
        if (!b) continue;
        *b = 0;
        if (strstr(a + 1, "memory")) return b + 1;
        if (a == line + 1 && line[0] == '0' && a + 1 == b) unified = b + 1;
    }
    return unified;
}
#endif

int main(void) {
    char path[4096];
#ifndef NARROW
    struct stat st;
    const char *host[] = {"/proc/meminfo", "/proc/pressure/memory", "/proc/net/sockstat",
                          "/proc/slabinfo"};
    for (int i = 0; i < 4; i++) read_file(host[i], buf, sizeof buf);
    if (!access("/sys/fs/cgroup/cgroup.controllers", F_OK)) version = 2;
    else if (!stat("/sys/fs/cgroup/memory", &st) && S_ISDIR(st.st_mode)) version = 1;
    strcpy(mount, version == 2 ? "/sys/fs/cgroup" : "/sys/fs/cgroup/memory");
    if (version) subdirs("", 0, root_visit);
    access("/dev/nvidiactl", F_OK);
#endif
    DIR *proc = opendir("/proc");
    if (!proc) return 1;
    size_t cap = 4096, count = 0;
    Proc *procs = malloc(cap * sizeof(Proc));
    struct dirent *e;
    while ((e = readdir(proc))) {
        if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
        snprintf(path, sizeof path, "/proc/%s/statm", e->d_name);
        if (read_file(path, buf, 256) <= 0) continue;
        long size, rss;
        if (sscanf(buf, "%ld %ld", &size, &rss) != 2) continue;
        if (count == cap) procs = realloc(procs, (cap *= 2) * sizeof(Proc));
        procs[count++] = (Proc){atoi(e->d_name), rss, 0};
    }
    closedir(proc);
    qsort(procs, count, sizeof(Proc), by_rss);
    size_t top = count < TOP + SLACK ? count : TOP + SLACK;
#ifdef NARROW
    const char *files[] = {"status", "comm", "smaps_rollup", "cgroup"};
#else
    const char *files[] = {"status", "cmdline", "smaps_rollup", "cgroup"};
    char (*cgroup)[512] = calloc(top, sizeof *cgroup);
#endif
    for (size_t i = 0; i < top; i++) {
        long bytes = 0;
        for (int f = 0; f < 4; f++) {
            snprintf(path, sizeof path, "/proc/%d/%s", procs[i].pid, files[f]);
            long n = read_file(path, buf, sizeof buf);
            if (n <= 0) continue;
            bytes += n;
#ifndef NARROW
            char *line; /* exact RSS (kB): smaps_rollup's Rss, else status's VmRSS */
            if (f == 0 && (line = strstr(buf, "\nVmRSS:"))) procs[i].rss = atol(line + 7);
            if (f == 2 && (line = strstr(buf, "\nRss:"))) procs[i].rss = atol(line + 5);
            if (f == 3) {
                const char *cg = memory_cgroup(buf);
                if (cg) snprintf(cgroup[i], sizeof cgroup[i], "%s", cg);
            }
            procs[i].slot = (int)i;
#endif
        }
        printf("%d %ld %ld\n", procs[i].pid, procs[i].rss, bytes);
    }
#ifndef NARROW
    int fd = open("/dev/kmsg", O_RDONLY | O_NONBLOCK);
    if (fd >= 0) {
        long n;
        while ((n = read(fd, buf, 16384)) != 0)
            if (n < 0 && errno != EPIPE) break;
        close(fd);
        read_file("/proc/stat", buf, sizeof buf);
    } else {
        read_file("/proc/self/status", buf, sizeof buf);
        read_file("/proc/sys/kernel/dmesg_restrict", buf, sizeof buf);
    }
    /* the kept processes (top TOP by exact RSS): their own cgroups, each once, pods' skipped */
    qsort(procs, top, sizeof(Proc), by_rss);
    for (size_t i = 0; version && i < top && i < TOP; i++) {
        const char *cg = cgroup[procs[i].slot];
        if (!cg[0] || !strcmp(cg, "/") || strstr(cg, "pod")) continue;
        int seen = 0;
        for (size_t j = 0; j < i; j++) seen |= !strcmp(cgroup[procs[j].slot], cg);
        snprintf(path, sizeof path, "%s%s", mount, cg);
        if (seen || stat(path, &st) || !S_ISDIR(st.st_mode)) continue;
        read_memory_files(cg);
    }
    free(cgroup);
#endif
    printf("%zu processes\n", count);
    free(procs);
    return 0;
}
