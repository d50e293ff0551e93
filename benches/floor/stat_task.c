/* The floor of a sound look at one batch: `leases explain` files a
 * run record by rules that span its task, so an answer that may not be stale
 * must at least learn that no file of the task changed since it was read.
 * Nothing short of a stat tells that (a file edited in place changes only its
 * own ctime). This lists the task's lease folder and records' folder and
 * statx'es every entry once: nothing else, one thread.
 *
 *   gcc -O2 -o stat_task benches/floor/stat_task.c
 *   ./stat_task <uc>/.ubunye/leases/<task> <uc>/.ubunye/lineage/<task>
 *
 * Prints the entries stat'ed, so a caller can check it saw the task.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

static unsigned long long entries;

static int one_folder(const char *path) {
    int dfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0) { perror(path); return 1; }
    DIR *d = fdopendir(dup(dfd));
    if (!d) { perror(path); return 1; }
    struct dirent *e;
    struct statx st;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.' && (!e->d_name[1] || (e->d_name[1] == '.' && !e->d_name[2]))) continue;
        if (statx(dfd, e->d_name, AT_SYMLINK_NOFOLLOW, STATX_BASIC_STATS | STATX_BTIME, &st) != 0) {
            perror(e->d_name);
            return 1;
        }
        entries++;
    }
    closedir(d);
    close(dfd);
    return 0;
}

int main(int argc, char **argv) {
    for (int i = 1; i < argc; i++)
        if (one_folder(argv[i])) return 1;
    printf("%llu entries\n", entries);
    return 0;
}
