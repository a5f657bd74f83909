/* Run a command and print its peak resident set size, for bench/collect.py: "maxrss_kib N" on
 * stderr, last. The command is fork()ed from this small process, so the figure is its own: a
 * child that Python's subprocess starts with vfork() reports in ru_maxrss the resident memory
 * its parent (the bench) had when it exec'd. Exit status: the command's (127: exec failed).
 * Build: cc -O2 -o maxrss maxrss.c */
#include <stdio.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv) {
    if (argc < 2) return 2;
    pid_t pid = fork();
    if (pid < 0) return 1;
    if (pid == 0) {
        execvp(argv[1], argv + 1);
        _exit(127);
    }
    int status;
    struct rusage usage;
    if (wait4(pid, &status, 0, &usage) < 0) return 1;
    fprintf(stderr, "maxrss_kib %ld\n", usage.ru_maxrss);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
