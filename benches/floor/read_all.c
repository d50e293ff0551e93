/* The read floor of a scan: every file under a folder opened and
 * read once, and nothing else. nftw walks the tree (one lstat a file, as a
 * scan's listing and type check need), each regular file is opened, read to
 * its end into one buffer and closed. One thread, as little work as a scan of
 * every lease, note and record can do.
 *
 *   gcc -O2 -o read_all benches/floor/read_all.c && ./read_all <uc>/.ubunye
 *
 * Prints the files and bytes read, so a caller can check it saw the tree.
 */
#define _XOPEN_SOURCE 700
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static char buf[1 << 20];
static unsigned long long files, bytes;

static int one(const char *path, const struct stat *st, int type, struct FTW *ftw) {
    (void)st;
    (void)ftw;
    if (type != FTW_F) return 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) { perror(path); return 1; }
    ssize_t n;
    while ((n = read(fd, buf, sizeof buf)) > 0) bytes += (unsigned long long)n;
    if (n < 0) { perror(path); close(fd); return 1; }
    close(fd);
    files++;
    return 0;
}

int main(int argc, char **argv) {
    if (argc != 2) { fprintf(stderr, "usage: read_all DIR\n"); return 2; }
    if (nftw(argv[1], one, 64, FTW_PHYS) != 0) return 1;
    printf("%llu files, %llu bytes\n", files, bytes);
    return 0;
}
