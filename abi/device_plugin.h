/* The C ABI between the Strata runtime and device plug-ins (accelerator drivers).
 *
 * A device plug-in is a shared library that exports exactly one function,
 *
 *     int strata_device_plugin_init(uint32_t abi_version, StrataDeviceApi* api,
 *                                   char* error, size_t error_capacity);
 *
 * which fills a table of function pointers. The runtime dlopens the library,
 * calls the entry point once (or more: it is idempotent) and from then on talks
 * to the device only through the table. A plug-in therefore links nothing of
 * Strata's, and the runtime needs no symbols from it but the entry point: a
 * vendor replaces the simulated NPU (vm/devices/sim_npu) by shipping another
 * library, without any change to the VM. docs/devices.md has a tutorial.
 *
 * This header is plain C (C99 and C++), includes only <stdint.h>, <stddef.h>
 * and DLPack (for DLDataType), and never changes incompatibly without bumping
 * STRATA_DEVICE_ABI_VERSION.
 *
 * ---- Objects and handles -------------------------------------------------------
 *
 * StrataDevice*       an open device instance (opaque pointer, from device_open).
 * StrataDeviceBuffer  a block of device memory. An opaque 64-bit handle, NOT a
 *                     host pointer: the host never dereferences device memory;
 *                     it moves bytes with the queue_copy_* commands.
 * StrataDeviceQueue   an in-order command queue (a CUDA stream, a HAL queue).
 * StrataDeviceEvent   a point in a queue's command stream, used to wait from the
 *                     host or from another queue.
 * StrataDeviceKernel  a device kernel, resolved once by name (kernel_lookup) so
 *                     that launching never compares strings.
 * Handle value 0 is never a valid handle of any kind. A plug-in must validate
 * every handle it is given: an unknown, destroyed or wrong-kind handle is an
 * error (STRATA_DEVICE_ERROR_INVALID_ARGUMENT), never a crash. Handles belong
 * to the device that created them.
 *
 * ---- Status and errors ---------------------------------------------------------
 *
 * Every function of the table returns an int status: 0 (STRATA_DEVICE_OK) on
 * success, one of STRATA_DEVICE_ERROR_* otherwise. After a failure,
 * last_error(device) returns a message naming the function, the object and the
 * reason, e.g.
 *     queue_copy_host_to_device: destination: bytes [4032, 4160) are outside buffer #3 of 4096 bytes
 * The message is per calling thread and per device, so threads sharing a device
 * never see each other's errors. Failures of calls that have no device (or
 * whose device pointer is not an open device), i.e. device_count, device_open
 * and device_close, are read with last_error(NULL). A successful call does not
 * clear the message.
 *
 * Asynchronous failures. Commands run after their submission returned, so a
 * command that fails while running (a kernel given shapes that do not agree, a
 * buffer freed before the command ran) cannot fail its submission. Its error is
 * recorded on its queue and returned (STRATA_DEVICE_ERROR_EXECUTION, with a
 * message naming the command, e.g. "kernel 'dense' (command #12 on queue #1)
 * failed: X [5, 24] has K = 24 features but W [16, 23] has 23 columns") by the
 * first of these calls that covers the failed command: queue_synchronize of
 * that queue, event_wait of an event recorded on that queue after the command,
 * device_synchronize. Reporting an error consumes it; when several commands
 * failed, the first is reported with the count of the others. A failed command
 * writes nothing; the commands after it still run, and the queue stays usable:
 * the caller drops the results of the failed sequence, and the next commands it
 * submits run normally.
 * Submission-time checks (handles, byte ranges, a well-formed argument list)
 * fail the submitting call itself and enqueue nothing.
 *
 * ---- Threading ---------------------------------------------------------------
 *
 * - strata_device_plugin_init may be called from any thread, any number of
 *   times; it fills the same table each time.
 * - Every function of the table is thread-safe, except device_close: several
 *   threads may allocate, submit to the same or different queues, wait and
 *   query at once. device_close must be the last call on a device: the caller
 *   makes sure no other thread uses the device (or any of its handles) during
 *   or after it.
 * - A queue executes its commands one at a time, in submission order. When
 *   several threads submit to one queue, the order is the order in which their
 *   calls took effect; a caller that needs a particular order submits from one
 *   thread. Different queues run concurrently; order them with events.
 * - Blocking calls (queue_synchronize, event_wait, device_synchronize,
 *   queue_destroy, device_close) wait for commands submitted before the call
 *   began; commands other threads submit meanwhile do not extend the wait.
 *
 * ---- Lifetime and ownership --------------------------------------------------
 *
 * - Host memory given to a copy command must stay valid (and, for a
 *   device->host copy, unread and unwritten by the host) until the command has
 *   completed, i.e. until a queue_synchronize of the queue, an event_wait (or an
 *   event_query that answers complete) of an event recorded after the command,
 *   or a device_synchronize has returned.
 * - Everything else a call receives (options, kernel argument arrays, shapes,
 *   kernel names) is read during the call only; the plug-in copies what it keeps.
 * - Strings and arrays a plug-in returns (last_error, StrataDeviceProperties'
 *   name, vendor and kernel_names) belong to the plug-in. last_error's result is
 *   valid until the same thread's next failing call on that device; the
 *   properties' strings until device_close.
 * - buffer_free releases a buffer at once: submissions that name it fail from
 *   then on, commands already queued that use it fail when they run (an
 *   execution error, never a write into memory that was reused), and a command
 *   running on it keeps the memory until it ends. To release a buffer after the
 *   commands queued before, use queue_free_buffer (stream-ordered, like
 *   cudaFreeAsync); ordering against other queues is the caller's job (events).
 * - queue_destroy and event_destroy may be called while commands that use them
 *   are queued: queue_destroy waits for the queue's commands first, a destroyed
 *   event still completes the commands that record or wait for it.
 * - device_close waits for all queued commands, then releases every queue,
 *   event and buffer that is left. Every handle of the device is invalid after.
 */
#ifndef STRATA_VM_DEVICE_PLUGIN_H_
#define STRATA_VM_DEVICE_PLUGIN_H_

#include <stddef.h>
#include <stdint.h>

#include <dlpack/dlpack.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The version of this header. A plug-in refuses any other version (its entry
 * point returns STRATA_DEVICE_ERROR_UNSUPPORTED and says which it implements).
 * Compatible additions (new functions at the end of StrataDeviceApi, new fields
 * at the end of a struct) keep the version and grow struct_size instead. */
#define STRATA_DEVICE_ABI_VERSION 1

/* The entry point's name, for dlsym. Its signature never changes. */
#define STRATA_DEVICE_PLUGIN_INIT_SYMBOL "strata_device_plugin_init"

/* ---- Status codes ---- */
#define STRATA_DEVICE_OK 0
/* A bad handle, a byte range outside a buffer, a malformed argument, a bad option. */
#define STRATA_DEVICE_ERROR_INVALID_ARGUMENT 1
/* Device memory exhausted; the device stays usable. */
#define STRATA_DEVICE_ERROR_OUT_OF_MEMORY 2
/* kernel_lookup: the device has no kernel of that name. */
#define STRATA_DEVICE_ERROR_NOT_FOUND 3
/* An ABI version or feature the plug-in does not implement, or a limit reached
 * (e.g. more queues than max_queues). */
#define STRATA_DEVICE_ERROR_UNSUPPORTED 4
/* An asynchronous command failed (see "Asynchronous failures" above). */
#define STRATA_DEVICE_ERROR_EXECUTION 5
/* A failure of the plug-in or the system (thread creation, host memory). */
#define STRATA_DEVICE_ERROR_INTERNAL 6

typedef struct StrataDevice StrataDevice; /* opaque */
typedef uint64_t StrataDeviceBuffer;
typedef uint64_t StrataDeviceQueue;
typedef uint64_t StrataDeviceEvent;
typedef uint64_t StrataDeviceKernel;

/* Device properties. The caller sets struct_size = sizeof(StrataDeviceProperties)
 * and the plug-in fills the fields that fit (see "Growing structs" below). */
typedef struct StrataDeviceProperties {
  uint32_t struct_size;
  uint32_t max_queues;             /* queues that may exist at once */
  const char* name;                /* e.g. "sim_npu" */
  const char* vendor;              /* e.g. "Strata (simulated)" */
  uint64_t total_memory_bytes;     /* device memory buffers can be allocated from */
  uint64_t alignment;              /* every buffer starts at a multiple of this (a power of two) */
  const char* const* kernel_names; /* num_kernels names, for kernel_lookup */
  uint32_t num_kernels;
  uint32_t reserved;
} StrataDeviceProperties;

/* ---- Kernel arguments ---- */
#define STRATA_DEVICE_ARG_BUFFER 1 /* a tensor in device memory: `buffer` */
#define STRATA_DEVICE_ARG_I64 2    /* an integer scalar: `i64` */
#define STRATA_DEVICE_ARG_F64 3    /* a floating-point scalar: `f64` */

/* Kernel tensors are dense and row-major (C order): no strides. */
#define STRATA_DEVICE_MAX_NDIM 8

typedef struct StrataDeviceTensorArg {
  StrataDeviceBuffer buffer;
  uint64_t byte_offset; /* where the tensor starts in the buffer; a multiple of the element size */
  const int64_t* shape; /* ndim dimensions (may be NULL when ndim == 0); read during the call only */
  int32_t ndim;         /* 0 .. STRATA_DEVICE_MAX_NDIM */
  DLDataType dtype;     /* element type, DLPack's encoding: {kDLFloat, 32, 1} is float32 */
} StrataDeviceTensorArg;

typedef struct StrataDeviceArg {
  int32_t kind; /* STRATA_DEVICE_ARG_* */
  union {
    StrataDeviceTensorArg buffer;
    int64_t i64;
    double f64;
  } value;
} StrataDeviceArg;

/* ---- Counters ----
 * Work the device did, for one queue or for the whole device (summed over its
 * queues, the destroyed ones included), since it opened or since reset_counters.
 * Only commands that ran successfully count; a failed command counts in
 * failed_commands only. Times are the plug-in's own estimate of device time
 * (simulated devices) or measured device time (hardware), in nanoseconds. */
typedef struct StrataDeviceCounters {
  uint32_t struct_size; /* set by the caller, as for StrataDeviceProperties */
  uint32_t reserved;
  uint64_t time_ns;   /* timeline: a queue's clock; for the device, the latest queue clock */
  uint64_t busy_ns;   /* sum of the device time of every command */
  uint64_t kernel_ns; /* of which kernels */
  uint64_t copy_ns;   /* of which copies */
  uint64_t kernel_launches;
  uint64_t host_to_device_copies;
  uint64_t host_to_device_bytes;
  uint64_t device_to_host_copies;
  uint64_t device_to_host_bytes;
  uint64_t device_to_device_copies;
  uint64_t device_to_device_bytes;
  uint64_t failed_commands;
  uint64_t memory_in_use_bytes; /* device-wide only (0 for a queue): allocated bytes now */
  uint64_t memory_peak_bytes;   /* device-wide only: the most allocated at once */
} StrataDeviceCounters;

/* ---- The function table ----
 * Growing structs: the runtime sets api->struct_size = sizeof(StrataDeviceApi)
 * (of the header it was built with) before calling the entry point; the plug-in
 * fills min(that, its own size) bytes and stores that size back. A field is
 * present iff STRATA_DEVICE_HAS_FIELD(StrataDeviceApi, api, field). The same
 * rule applies to StrataDeviceProperties and StrataDeviceCounters. A struct_size
 * smaller than the version-1 struct is refused (INVALID_ARGUMENT). Every
 * version-1 field is mandatory: a plug-in sets every function pointer. */
typedef struct StrataDeviceApi {
  uint32_t struct_size;
  uint32_t abi_version;       /* STRATA_DEVICE_ABI_VERSION of the plug-in */
  const char* plugin_name;    /* e.g. "sim_npu"; static storage */
  const char* plugin_version; /* the driver's own version string; static storage */

  /* The message of this thread's latest failed call on `device` (NULL: calls
   * without a device). Never NULL; "" when there was none. */
  const char* (*last_error)(StrataDevice* device);

  /* ---- devices ---- */
  /* How many devices of this kind the machine has (0 is not an error). */
  int (*device_count)(int32_t* out_count);
  /* Opens device `index` with `options` ("key=value" pairs separated by commas
   * or spaces; NULL or "" for the defaults; an unknown key is an error). Each
   * open returns a new instance; whether instances of one index share the
   * hardware is the plug-in's business. */
  int (*device_open)(int32_t index, const char* options, StrataDevice** out_device);
  /* Waits for all commands, then releases the device and all it holds. Returns
   * STRATA_DEVICE_ERROR_EXECUTION (message from last_error(NULL)) if commands
   * failed and no call reported it; the device is closed either way. */
  int (*device_close)(StrataDevice* device);
  int (*device_get_properties)(StrataDevice* device, StrataDeviceProperties* out_properties);
  /* Waits for every command of every queue submitted before the call; reports
   * (and consumes) the failures among them. */
  int (*device_synchronize)(StrataDevice* device);

  /* ---- memory ---- */
  /* Allocates `size_bytes` (0 allowed) of uninitialized device memory. */
  int (*buffer_allocate)(StrataDevice* device, uint64_t size_bytes, StrataDeviceBuffer* out_buffer);
  /* Releases a buffer now (see "Lifetime and ownership" for queued commands). */
  int (*buffer_free)(StrataDevice* device, StrataDeviceBuffer buffer);
  /* The size the buffer was allocated with. */
  int (*buffer_get_size)(StrataDevice* device, StrataDeviceBuffer buffer, uint64_t* out_size_bytes);

  /* ---- kernels ---- */
  /* Resolves a kernel name (one of StrataDeviceProperties.kernel_names). */
  int (*kernel_lookup)(StrataDevice* device, const char* name, StrataDeviceKernel* out_kernel);

  /* ---- queues ---- */
  int (*queue_create)(StrataDevice* device, StrataDeviceQueue* out_queue);
  /* Waits for the queue's commands, then destroys it. Like device_close, returns
   * STRATA_DEVICE_ERROR_EXECUTION for failures no call reported (destroyed
   * either way). */
  int (*queue_destroy)(StrataDevice* device, StrataDeviceQueue queue);
  /* Copy commands: `size_bytes` bytes, any byte offsets; the byte range must lie
   * inside the buffer (checked at submission). */
  int (*queue_copy_host_to_device)(StrataDevice* device, StrataDeviceQueue queue, const void* host_src,
                                   StrataDeviceBuffer dst, uint64_t dst_offset, uint64_t size_bytes);
  int (*queue_copy_device_to_host)(StrataDevice* device, StrataDeviceQueue queue, StrataDeviceBuffer src,
                                   uint64_t src_offset, void* host_dst, uint64_t size_bytes);
  /* Overlapping source and destination ranges are an error. */
  int (*queue_copy_device_to_device)(StrataDevice* device, StrataDeviceQueue queue, StrataDeviceBuffer src,
                                     uint64_t src_offset, StrataDeviceBuffer dst, uint64_t dst_offset,
                                     uint64_t size_bytes);
  /* Launches `kernel` on `args` (num_args entries; args may be NULL when 0).
   * The submission checks that the list is well formed and that every tensor's
   * bytes lie inside its buffer; the kernel checks the rest (argument count,
   * kinds, dtypes, ranks, shapes) when it runs. */
  int (*queue_launch)(StrataDevice* device, StrataDeviceQueue queue, StrataDeviceKernel kernel,
                      const StrataDeviceArg* args, int32_t num_args);
  /* Frees `buffer` once the queue's earlier commands have run. Submissions that
   * name the buffer fail from this call on. */
  int (*queue_free_buffer)(StrataDevice* device, StrataDeviceQueue queue, StrataDeviceBuffer buffer);
  /* Waits (on the host) for the queue's commands submitted before the call and
   * reports their failures. */
  int (*queue_synchronize)(StrataDevice* device, StrataDeviceQueue queue);

  /* ---- events ---- */
  int (*event_create)(StrataDevice* device, StrataDeviceEvent* out_event);
  int (*event_destroy)(StrataDevice* device, StrataDeviceEvent event);
  /* The event completes when the queue reaches this point. Recording again
   * moves the event to the new point (the latest record is the one waited for). */
  int (*queue_record_event)(StrataDevice* device, StrataDeviceQueue queue, StrataDeviceEvent event);
  /* The queue's later commands wait until the event's latest record (as of this
   * call) has completed; an event never recorded is complete. */
  int (*queue_wait_event)(StrataDevice* device, StrataDeviceQueue queue, StrataDeviceEvent event);
  /* Blocks the host until the event's latest record has completed; reports
   * failures of the recording queue's commands before the record. */
  int (*event_wait)(StrataDevice* device, StrataDeviceEvent event);
  /* Non-blocking: *out_complete = 1 when the event's latest record has
   * completed, else 0. Reports no command failures (event_wait does). */
  int (*event_query)(StrataDevice* device, StrataDeviceEvent event, int32_t* out_complete);

  /* ---- counters ---- */
  /* Counters of `queue`, or of the whole device when queue == 0. */
  int (*get_counters)(StrataDevice* device, StrataDeviceQueue queue, StrataDeviceCounters* out_counters);
  /* Zeroes every counter and queue clock; memory_peak_bytes restarts at the
   * bytes in use. Commands running meanwhile count in the new period. */
  int (*reset_counters)(StrataDevice* device);
} StrataDeviceApi;

/* Whether `*ptr`, a struct of `type` filled by a plug-in (StrataDeviceApi,
 * StrataDeviceProperties, StrataDeviceCounters), holds `field`. */
#define STRATA_DEVICE_HAS_FIELD(type, ptr, field) \
  (offsetof(type, field) + sizeof(((type*)0)->field) <= (size_t)(ptr)->struct_size)

/* The entry point. Fills `api` (whose struct_size the caller set) for ABI
 * `abi_version` and returns STRATA_DEVICE_OK. Refuses (UNSUPPORTED) an
 * abi_version it does not implement and (INVALID_ARGUMENT) a struct_size smaller
 * than the version-1 table, writing a NUL-terminated reason into `error` (at
 * most error_capacity bytes; error may be NULL). */
typedef int (*StrataDevicePluginInitFn)(uint32_t abi_version, StrataDeviceApi* api, char* error, size_t error_capacity);

#ifdef __cplusplus
}
#endif

#endif /* STRATA_VM_DEVICE_PLUGIN_H_ */
