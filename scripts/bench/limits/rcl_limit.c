/* The machine's limit for the recorder and the bag player: the least a ROS 2 program can do through rcl.
 *
 *   rcl_limit publish <topic> <size_bytes> <count>
 *       Publishes serialized std_msgs/String messages of <size_bytes> bytes <count> times in a tight loop
 *       (reliable, volatile, keep last 10: the bag player's QoS for the benchmark's bag) and prints
 *       "published <count> <seconds from first to last publish>". The messages cycle through 64 MiB of
 *       distinct copies (or <count> of them if fewer), so that large messages come from memory as a bag
 *       player's do, not from a cache-hot buffer.
 *   rcl_limit take <topic> <count> [<file>]
 *       Takes serialized std_msgs/UInt8MultiArray messages (what lockstep_loadgen publishes; reliable,
 *       volatile, keep all: the recorder's QoS) and drops them, or appends each to <file> with one write(2),
 *       until <count> have arrived or SIGINT; prints "taken <n>". The benchmark reads its CPU time from
 *       /proc, as it does the recorder's.
 *
 * Built by scripts/bench/limits/build.sh against the ROS 2 libraries scripts/setup.sh installs. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rcl/error_handling.h>
#include <rcl/rcl.h>
#include <rmw/serialized_message.h>
#include <rosidl_runtime_c/message_type_support_struct.h>
#include <std_msgs/msg/string.h>
#include <std_msgs/msg/u_int8_multi_array.h>

static volatile sig_atomic_t stop = 0;
static void on_signal(int sig) { (void)sig; stop = 1; }

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

#define CHECK(call)                                                                   \
    do {                                                                              \
        rcl_ret_t ret_ = (call);                                                      \
        if (ret_ != RCL_RET_OK) {                                                     \
            fprintf(stderr, "rcl_limit: %s failed (%d): %s\n", #call, (int)ret_,      \
                    rcl_get_error_string().str);                                      \
            return 1;                                                                 \
        }                                                                             \
    } while (0)

static rmw_qos_profile_t qos(int keep_all) {
    rmw_qos_profile_t q = rmw_qos_profile_default; /* reliable, volatile, keep last 10 */
    if (keep_all) q.history = RMW_QOS_POLICY_HISTORY_KEEP_ALL;
    return q;
}

static int publish(rcl_node_t *node, const char *topic, size_t size, long count) {
    const rosidl_message_type_support_t *ts = ROSIDL_GET_MSG_TYPE_SUPPORT(std_msgs, msg, String);
    rcl_publisher_t pub = rcl_get_zero_initialized_publisher();
    rcl_publisher_options_t opts = rcl_publisher_get_default_options();
    opts.qos = qos(0);
    CHECK(rcl_publisher_init(&pub, node, ts, topic, &opts));
    /* CDR of a String: 4-byte encapsulation header, 4-byte length, text, NUL. */
    if (size < 9) { fprintf(stderr, "rcl_limit: size_bytes must be at least 9\n"); return 1; }
    size_t copies = ((size_t)64 << 20) / size;
    if (copies < 1) copies = 1;
    if ((long)copies > count) copies = (size_t)(count > 0 ? count : 1);
    unsigned char *pool = malloc(copies * size);
    if (!pool) { fprintf(stderr, "rcl_limit: out of memory\n"); return 1; }
    const unsigned char head[4] = {0, 1, 0, 0};
    unsigned int len = (unsigned int)(size - 8);
    for (size_t c = 0; c < copies; c++) {
        unsigned char *m = pool + c * size;
        memset(m, 'a' + (int)(c % 26), size);
        memcpy(m, head, 4);
        memcpy(m + 4, &len, 4);
        m[size - 1] = 0;
    }
    rcutils_allocator_t alloc = rcutils_get_default_allocator();
    rmw_serialized_message_t msg = rmw_get_zero_initialized_serialized_message();
    msg.buffer_length = size;
    msg.buffer_capacity = size;
    msg.allocator = alloc;
    double first = 0, last = 0;
    for (long i = 0; i < count && !stop; i++) {
        msg.buffer = pool + (size_t)(i % (long)copies) * size;
        CHECK(rcl_publish_serialized_message(&pub, &msg, NULL));
        last = now_s();
        if (i == 0) first = last;
    }
    printf("published %ld %.6f\n", count, last - first);
    fflush(stdout);
    free(pool);
    CHECK(rcl_publisher_fini(&pub, node));
    return 0;
}

static int take(rcl_context_t *context, rcl_node_t *node, const char *topic, long count, const char *path) {
    FILE *out = NULL;
    if (path && !(out = fopen(path, "wb"))) { perror(path); return 1; }
    if (out) setvbuf(out, NULL, _IONBF, 0); /* one write(2) per message, as a writer handing chunks to the OS */
    const rosidl_message_type_support_t *ts = ROSIDL_GET_MSG_TYPE_SUPPORT(std_msgs, msg, UInt8MultiArray);
    rcl_subscription_t sub = rcl_get_zero_initialized_subscription();
    rcl_subscription_options_t opts = rcl_subscription_get_default_options();
    opts.qos = qos(1);
    CHECK(rcl_subscription_init(&sub, node, ts, topic, &opts));
    rcl_allocator_t alloc = rcl_get_default_allocator();
    rcl_wait_set_t ws = rcl_get_zero_initialized_wait_set();
    CHECK(rcl_wait_set_init(&ws, 1, 0, 0, 0, 0, 0, context, alloc));
    rmw_serialized_message_t msg = rmw_get_zero_initialized_serialized_message();
    if (rmw_serialized_message_init(&msg, 0, &alloc) != RMW_RET_OK) return 1;
    long taken = 0;
    printf("ready\n");
    fflush(stdout);
    while (taken < count && !stop) {
        CHECK(rcl_wait_set_clear(&ws));
        CHECK(rcl_wait_set_add_subscription(&ws, &sub, NULL));
        rcl_ret_t r = rcl_wait(&ws, RCL_MS_TO_NS(100));
        if (r == RCL_RET_TIMEOUT) continue;
        if (r != RCL_RET_OK) { fprintf(stderr, "rcl_limit: rcl_wait failed (%d)\n", (int)r); return 1; }
        for (;;) { /* drain what has arrived, as the recorder does */
            rmw_message_info_t info;
            r = rcl_take_serialized_message(&sub, &msg, &info, NULL);
            if (r == RCL_RET_SUBSCRIPTION_TAKE_FAILED) break;
            if (r != RCL_RET_OK) { fprintf(stderr, "rcl_limit: take failed (%d)\n", (int)r); return 1; }
            if (out && fwrite(msg.buffer, 1, msg.buffer_length, out) != msg.buffer_length) {
                perror(path);
                return 1;
            }
            taken++;
        }
    }
    if (out) fclose(out);
    printf("taken %ld\n", taken);
    fflush(stdout);
    (void)!rmw_serialized_message_fini(&msg);
    CHECK(rcl_wait_set_fini(&ws));
    CHECK(rcl_subscription_fini(&sub, node));
    return 0;
}

int main(int argc, char **argv) {
    int is_pub = argc == 5 && strcmp(argv[1], "publish") == 0;
    int is_take = (argc == 4 || argc == 5) && strcmp(argv[1], "take") == 0;
    if (!is_pub && !is_take) {
        fprintf(stderr, "usage: rcl_limit publish <topic> <size_bytes> <count> | take <topic> <count> [<file>]\n");
        return 2;
    }
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    rcl_allocator_t alloc = rcl_get_default_allocator();
    rcl_init_options_t init_opts = rcl_get_zero_initialized_init_options();
    CHECK(rcl_init_options_init(&init_opts, alloc));
    rcl_context_t context = rcl_get_zero_initialized_context();
    CHECK(rcl_init(argc, (const char **)argv, &init_opts, &context));
    rcl_node_t node = rcl_get_zero_initialized_node();
    rcl_node_options_t node_opts = rcl_node_get_default_options();
    CHECK(rcl_node_init(&node, is_pub ? "rcl_limit_publish" : "rcl_limit_take", "", &context, &node_opts));
    int rc = is_pub ? publish(&node, argv[2], (size_t)atol(argv[3]), atol(argv[4]))
                    : take(&context, &node, argv[2], atol(argv[3]), argc == 5 ? argv[4] : NULL);
    (void)!rcl_node_fini(&node);
    (void)!rcl_shutdown(&context);
    (void)!rcl_context_fini(&context);
    return rc;
}
