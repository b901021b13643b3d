/*
 * A streaming JSON writer for the bench's results: objects, arrays, strings and numbers,
 * written as they come so that rows go out as they are measured. An object inside an array (a
 * row of the table) stays on one line, so that a file reads like the table it mirrors.
 */
#include <assert.h>
#include <math.h>
#include "bench.h"

/* Escapes what JSON requires; other bytes (UTF-8 included) go out as they are. */
static void bench_json_quoted(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p != '\0'; p++) {
        if (*p == '"' || *p == '\\') {
            fprintf(f, "\\%c", *p);
        } else if (*p < 0x20) {
            fprintf(f, "\\u%04x", *p);
        } else {
            fputc(*p, f);
        }
    }
    fputc('"', f);
}

/* The separator and the key of the next member of the innermost container. A member gets a
 * line of its own in an object that is not a row, and in an array when it is a container: an
 * array of strings or numbers stays on one line, an array of rows gets a line per row. */
static void bench_json_member(bench_json_t *j, const char *key, int container)
{
    int d = j->depth, own_line;

    if (d > 0) {
        own_line = j->close[d - 1] == ']' ? container : !j->oneline[d - 1];
        if (!j->first[d - 1]) {
            fputs(own_line ? "," : ", ", j->f);
        }
        if (own_line) {
            fprintf(j->f, "\n%*s", 2 * d, "");
            j->broken[d - 1] = 1;
        }
        j->first[d - 1] = 0;
    }
    if (key != NULL) {
        bench_json_quoted(j->f, key);
        fputs(": ", j->f);
    }
}

static void bench_json_push(bench_json_t *j, const char *key, char open, char close)
{
    int inside_array = j->depth > 0 && j->close[j->depth - 1] == ']';
    int inside_row = j->depth > 0 && j->oneline[j->depth - 1];

    assert(j->depth < BENCH_JSON_DEPTH);
    bench_json_member(j, key, 1);
    fputc(open, j->f);
    j->close[j->depth] = close;
    j->first[j->depth] = 1;
    j->broken[j->depth] = 0;
    /* An object inside a row (--tail's) stays on the row's line, as the row does. */
    j->oneline[j->depth] = open == '{' && (inside_array || inside_row);
    j->depth++;
}

void bench_json_open(bench_json_t *j, FILE *f)
{
    j->f = f;
    j->depth = 0;
    bench_json_push(j, NULL, '{', '}');
}

void bench_json_object(bench_json_t *j, const char *key)
{
    bench_json_push(j, key, '{', '}');
}

void bench_json_array(bench_json_t *j, const char *key)
{
    bench_json_push(j, key, '[', ']');
}

void bench_json_end(bench_json_t *j)
{
    int d = --j->depth;

    assert(d >= 0);
    if (j->broken[d]) {
        fprintf(j->f, "\n%*s", 2 * d, "");
    }
    fputc(j->close[d], j->f);
    if (d == 0) {
        fputc('\n', j->f);
        fflush(j->f);
    }
}

void bench_json_string(bench_json_t *j, const char *key, const char *s)
{
    bench_json_member(j, key, 0);
    if (s == NULL) {
        fputs("null", j->f);
    } else {
        bench_json_quoted(j->f, s);
    }
}

void bench_json_number(bench_json_t *j, const char *key, double v)
{
    bench_json_member(j, key, 0);
    /* Six significant digits: more than a timing carries, and exact enough to recompute a
     * ratio from the columns it came from. */
    if (isfinite(v)) {
        fprintf(j->f, "%.6g", v);
    } else {
        fputs("null", j->f);
    }
}

void bench_json_integer(bench_json_t *j, const char *key, long long v)
{
    bench_json_member(j, key, 0);
    fprintf(j->f, "%lld", v);
}

void bench_json_bool(bench_json_t *j, const char *key, int v)
{
    bench_json_member(j, key, 0);
    fputs(v ? "true" : "false", j->f);
}
