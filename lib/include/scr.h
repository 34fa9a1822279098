/* SCR in Rust: the C API of SCR v3.1 (Scalable Checkpoint/Restart), a superset of
 * v1.2 / v2.0.0's. Programs written against SCR's scr.h compile and link against this one. */
#ifndef SCR_H
#define SCR_H

#define SCR_MAJOR_VERSION "3"
#define SCR_MINOR_VERSION "1"
#define SCR_PATCH_VERSION "0"
#define SCR_VERSION "v3.1.0"

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

/* SCR v3.1: "KEY=VALUE" sets and "KEY=" unsets (before SCR_Init; NULL is returned),
 * "KEY" or "KEY=NAME ATTR" queries: the value in a string the caller frees, or NULL. */
const char* SCR_Config(const char* config);

/* SCR v3.1: SCR_Config of the line printf would make of format and the arguments after it. */
const char* SCR_Configf(const char* format, ...);

/* SCR v3.1: choose the checkpoint a restart loads; forget one in the index; delete one
 * from cache, prefix and index. */
int SCR_Current(const char* name);
int SCR_Drop(const char* name);
int SCR_Delete(const char* name);

/* Beyond SCR: a restart on another number of ranks through the restart API (offered only
 * to a program that says it re-partitions: SCR_RESHAPE=1, set before SCR_Init). Between
 * SCR_Start_restart and SCR_Complete_restart: how many ranks wrote the checkpoint, and the
 * files this rank may route (paths on the prefix, SCR_MAX_FILENAME bytes each, for
 * 0 <= index < count): its own when the job has as many ranks as the one that wrote it,
 * every file of the checkpoint, in the writers' rank order, when it has not (any rank
 * may then route any of them). */
#define SCR_HAVE_RESTART_FILE_LIST 1
int SCR_Restart_writers(int* ranks);
int SCR_Restart_file_count(int* count);
int SCR_Restart_file_name(int index, char* name);

#ifdef __cplusplus
}
#endif

#endif /* SCR_H */
