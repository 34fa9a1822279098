/* SCR in Rust: the C API of SCR v1.2 / v2.0.0 (Scalable Checkpoint/Restart).
 * Programs written against SCR's scr.h compile and link against this one. */
#ifndef SCR_H
#define SCR_H

#define SCR_MAJOR_VERSION "1"
#define SCR_MINOR_VERSION "2"
#define SCR_PATCH_VERSION "0"
#define SCR_VERSION "v1.2.0"

#define SCR_SUCCESS (0)
#define SCR_MAX_FILENAME 1024

#define SCR_FLAG_NONE       (0 << 0)
#define SCR_FLAG_CHECKPOINT (1 << 0)
#define SCR_FLAG_OUTPUT     (1 << 1)

#ifdef __cplusplus
extern "C" {
#endif

int SCR_Init(void);
int SCR_Finalize(void);

int SCR_Route_file(const char* name, char* file);

int SCR_Have_restart(int* flag, char* name);
int SCR_Start_restart(char* name);
int SCR_Complete_restart(int valid);

int SCR_Need_checkpoint(int* flag);
int SCR_Start_checkpoint(void);
int SCR_Complete_checkpoint(int valid);

int SCR_Start_output(const char* name, int flags);
int SCR_Complete_output(int valid);

char* SCR_Get_version(void);

int SCR_Should_exit(int* flag);

#ifdef __cplusplus
}
#endif

#endif /* SCR_H */
