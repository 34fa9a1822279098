/* The formatting half of SCR_Configf (SCR v3.1's printf-style SCR_Config). Rust cannot
 * define a C variadic function on stable, so this C function takes the variable
 * arguments, and libscr's exported SCR_Configf (src/configf.rs) hands them over to it
 * untouched. Hidden: only SCR_Configf is the library's interface. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

char* SCR_Config(const char* config);

__attribute__((visibility("hidden")))
const char* scr_configf_formatted(const char* format, ...) {
  if (format == NULL) return SCR_Config(NULL);
  va_list args, again;
  va_start(args, format);
  va_copy(again, args);
  int n = vsnprintf(NULL, 0, format, args);
  va_end(args);
  char* line = n < 0 ? NULL : (char*) malloc((size_t) n + 1);
  if (line != NULL) vsnprintf(line, (size_t) n + 1, format, again);
  va_end(again);
  if (line == NULL) {
    fprintf(stderr, "SCR: ERROR: SCR_Configf: cannot format \"%s\"\n", format);
    return NULL;
  }
  const char* value = SCR_Config(line);
  free(line);
  return value;
}
