/*
** replay.c: runs a fuzz harness over its committed corpus, without
** libFuzzer (make test builds this with gcc, plain and under ASan+UBSan).
**
**   build/tests/test_fuzz_options tests/fuzz/corpus/options
**
** Each argument is a file or a directory of files; with none, the
** harness's own corpus directory (FUZZ_CORPUS) is replayed.  A crash or a
** sanitizer report fails the test; otherwise one "ok" line per corpus.
*/
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int replay_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return 0;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  uint8_t *buf = malloc(n > 0 ? (size_t)n : 1);
  size_t got = buf ? fread(buf, 1, (size_t)n, f) : 0;
  fclose(f);
  if (!buf) return 0;
  LLVMFuzzerTestOneInput(buf, got);
  free(buf);
  return 1;
}

static int replay(const char *path) {
  struct stat st;
  if (stat(path, &st) != 0) return -1;
  if (!S_ISDIR(st.st_mode)) return replay_file(path);
  DIR *d = opendir(path);
  if (!d) return -1;
  int n = 0;
  struct dirent *e;
  char full[4096];
  while ((e = readdir(d))) {
    if (e->d_name[0] == '.') continue;
    snprintf(full, sizeof full, "%s/%s", path, e->d_name);
    n += replay_file(full);
  }
  closedir(d);
  return n;
}

int main(int argc, char **argv) {
  const char *dflt[] = {argv[0], FUZZ_CORPUS};
  if (argc < 2) {
    argc = 2;
    argv = (char **)dflt;
  }
  int bad = 0;
  for (int i = 1; i < argc; i++) {
    int n = replay(argv[i]);
    if (n <= 0) {
      printf("not ok replay %s: no inputs\n", argv[i]);
      bad = 1;
    } else {
      printf("ok replayed %d inputs of %s without a crash\n", n, argv[i]);
    }
  }
  return bad;
}
