/* The rcl interceptor's cost per message, measured from the least a ROS 2 program can do: C over rcl, no
 * client library. scripts/bench/intercept.sh runs it plain, with the interceptor preloaded but disabled, and
 * in record mode with parts of its work left out (LOCKSTEP_INTERCEPT_SKIP), on the same loops.
 *
 *   intercept_bench <size_bytes>:<count> [<size_bytes>:<count> ...]
 *
 * One node "intercept_bench" with a publisher and a subscription of std_msgs/msg/UInt8MultiArray on
 * /intercept_bench/data (reliable, volatile, keep last 10), matched before anything is timed. For each size
 * (the length of the message's byte sequence), after count/10 untimed iterations of each loop (first the
 * publish loops of every size, then the round trips):
 *   publish:   <count> rcl_publish calls in a tight loop; the subscription is matched (Fast DDS delivers
 *              each message to it within the call) but takes nothing.
 *              Prints "publish <size> <count> <seconds>".
 *   roundtrip: <count> times rcl_publish, rcl_wait on the subscription, rcl_take of that message (the
 *              subscription drained first; after another size's round trips, 300 ms pass first).
 *              Prints "roundtrip <size> <count> <seconds>".
 * The payload's first bytes change with every message, so every message has its own digest. At the end it
 * prints "interceptor_publishers <h> <e>": the publishers of the node's dependency headers and event log
 * (1 and 1 when the interceptor records, 0 and 0 without it).
 *
 * Built by scripts/bench/intercept.sh against the ROS 2 headers and libraries scripts/setup.sh installed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rcl/error_handling.h>
#include <rcl/graph.h>
#include <rcl/rcl.h>
#include <rosidl_runtime_c/message_type_support_struct.h>
#include <rosidl_runtime_c/primitives_sequence_functions.h>
#include <std_msgs/msg/u_int8_multi_array.h>

#define TOPIC "/intercept_bench/data"

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

#define CHECK(call)                                                                   \
    do {                                                                              \
        rcl_ret_t ret_ = (call);                                                      \
        if (ret_ != RCL_RET_OK) {                                                     \
            fprintf(stderr, "intercept_bench: %s failed (%d): %s\n", #call, (int)ret_, \
                    rcl_get_error_string().str);                                      \
            exit(1);                                                                  \
        }                                                                             \
    } while (0)

typedef struct {
    rcl_context_t *context;
    rcl_publisher_t pub;
    rcl_subscription_t sub;
    rcl_wait_set_t ws;
    std_msgs__msg__UInt8MultiArray out; /* what is published */
    std_msgs__msg__UInt8MultiArray in;  /* what is taken */
} Bench;

static void stamp(Bench *b, long i) {
    size_t n = b->out.data.size < sizeof(long) ? b->out.data.size : sizeof(long);
    memcpy(b->out.data.data, &i, n);
}

/* Wait up to `timeout_ns` for the subscription; whether it has something. */
static int wait_sub(Bench *b, int64_t timeout_ns) {
    CHECK(rcl_wait_set_clear(&b->ws));
    CHECK(rcl_wait_set_add_subscription(&b->ws, &b->sub, NULL));
    rcl_ret_t r = rcl_wait(&b->ws, timeout_ns);
    if (r == RCL_RET_TIMEOUT) return 0;
    CHECK(r);
    return b->ws.subscriptions[0] != NULL;
}

static int take_one(Bench *b) {
    rmw_message_info_t info = rmw_get_zero_initialized_message_info();
    rcl_ret_t r = rcl_take(&b->sub, &b->in, &info, NULL);
    if (r == RCL_RET_SUBSCRIPTION_TAKE_FAILED) return 0;
    CHECK(r);
    return 1;
}

static void drain(Bench *b) {
    while (take_one(b)) {}
}

static double publish_loop(Bench *b, long count, long first) {
    double t0 = now_s();
    for (long i = 0; i < count; i++) {
        stamp(b, first + i);
        CHECK(rcl_publish(&b->pub, &b->out, NULL));
    }
    return now_s() - t0;
}

static double roundtrip_loop(Bench *b, long count, long first) {
    double t0 = now_s();
    for (long i = 0; i < count; i++) {
        stamp(b, first + i);
        CHECK(rcl_publish(&b->pub, &b->out, NULL));
        /* The interceptor may cut a wait short to send what it holds: wait again until the message is here. */
        int got = 0;
        for (int tries = 0; !got && tries < 10; tries++) {
            if (wait_sub(b, RCL_S_TO_NS(1))) got = take_one(b);
        }
        if (!got) {
            fprintf(stderr, "intercept_bench: message %ld did not come back\n", first + i);
            exit(1);
        }
        size_t stamped = b->out.data.size < sizeof(long) ? b->out.data.size : sizeof(long);
        if (b->in.data.size != b->out.data.size || memcmp(b->in.data.data, b->out.data.data, stamped) != 0) {
            fprintf(stderr, "intercept_bench: took another message (%zu bytes) than message %ld (%zu bytes)\n",
                    b->in.data.size, first + i, b->out.data.size);
            exit(1);
        }
    }
    return now_s() - t0;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: intercept_bench <size_bytes>:<count> [<size_bytes>:<count> ...]\n");
        return 2;
    }
    rcl_allocator_t alloc = rcl_get_default_allocator();
    rcl_init_options_t init_opts = rcl_get_zero_initialized_init_options();
    CHECK(rcl_init_options_init(&init_opts, alloc));
    rcl_context_t context = rcl_get_zero_initialized_context();
    CHECK(rcl_init(0, NULL, &init_opts, &context));
    rcl_node_t node = rcl_get_zero_initialized_node();
    rcl_node_options_t node_opts = rcl_node_get_default_options();
    CHECK(rcl_node_init(&node, "intercept_bench", "", &context, &node_opts));

    Bench b;
    memset(&b, 0, sizeof b);
    b.context = &context;
    const rosidl_message_type_support_t *ts = ROSIDL_GET_MSG_TYPE_SUPPORT(std_msgs, msg, UInt8MultiArray);
    b.pub = rcl_get_zero_initialized_publisher();
    rcl_publisher_options_t pub_opts = rcl_publisher_get_default_options(); /* reliable, volatile, keep last 10 */
    CHECK(rcl_publisher_init(&b.pub, &node, ts, TOPIC, &pub_opts));
    b.sub = rcl_get_zero_initialized_subscription();
    rcl_subscription_options_t sub_opts = rcl_subscription_get_default_options();
    CHECK(rcl_subscription_init(&b.sub, &node, ts, TOPIC, &sub_opts));
    b.ws = rcl_get_zero_initialized_wait_set();
    CHECK(rcl_wait_set_init(&b.ws, 1, 0, 0, 0, 0, 0, &context, alloc));
    if (!std_msgs__msg__UInt8MultiArray__init(&b.out) || !std_msgs__msg__UInt8MultiArray__init(&b.in)) {
        fprintf(stderr, "intercept_bench: cannot initialise the messages\n");
        return 1;
    }

    /* Matched both ways, and one message through, before anything is timed. */
    double deadline = now_s() + 30;
    for (;;) {
        size_t subs = 0, pubs = 0;
        CHECK(rcl_publisher_get_subscription_count(&b.pub, &subs));
        CHECK(rcl_subscription_get_publisher_count(&b.sub, &pubs));
        if (subs >= 1 && pubs >= 1) break;
        if (now_s() > deadline) {
            fprintf(stderr, "intercept_bench: publisher and subscription never matched\n");
            return 1;
        }
        struct timespec pause = {0, 10 * 1000 * 1000};
        nanosleep(&pause, NULL);
    }

    /* Every size's publish loop first: until the node takes a message, its outputs have no inputs, so the
     * interceptor publishes their headers at once (after a take, each output names the latest message taken,
     * and waits for that message's header). */
    size_t sizes[16];
    long counts[16];
    int n = argc - 1;
    if (n > 16) { fprintf(stderr, "intercept_bench: at most 16 sizes\n"); return 2; }
    for (int a = 0; a < n; a++) {
        if (sscanf(argv[a + 1], "%zu:%ld", &sizes[a], &counts[a]) != 2 || counts[a] < 1) {
            fprintf(stderr, "intercept_bench: %s is not <size_bytes>:<count>\n", argv[a + 1]);
            return 2;
        }
    }
    long counter = 0;
    for (int pass = 0; pass < 2; pass++) {
        for (int a = 0; a < n; a++) {
            size_t size = sizes[a];
            long count = counts[a], warmup = counts[a] / 10 > 0 ? counts[a] / 10 : 1;
            rosidl_runtime_c__uint8__Sequence__fini(&b.out.data);
            if (!rosidl_runtime_c__uint8__Sequence__init(&b.out.data, size)) {
                fprintf(stderr, "intercept_bench: out of memory\n");
                return 1;
            }
            for (size_t k = 0; k < size; k++) b.out.data.data[k] = (uint8_t)(k * 7);
            if (pass == 0) {
                publish_loop(&b, warmup, counter);
                counter += warmup;
                double secs = publish_loop(&b, count, counter);
                counter += count;
                printf("publish %zu %ld %.9f\n", size, count, secs);
            } else {
                /* Untimed: take what the publish loops left; after a round trip loop, wait 300 ms in 50 ms
                 * slices, so that its outputs whose headers wait (up to 200 ms) are gone before this loop. */
                drain(&b);
                double until = now_s() + (a > 0 ? 0.3 : 0.0);
                while (now_s() < until) {
                    if (wait_sub(&b, RCL_MS_TO_NS(50))) drain(&b);
                }
                roundtrip_loop(&b, warmup, counter);
                counter += warmup;
                double secs = roundtrip_loop(&b, count, counter);
                counter += count;
                printf("roundtrip %zu %ld %.9f\n", size, count, secs);
            }
            fflush(stdout);
        }
    }

    /* What the interceptor made on this node (none without it): says whether it recorded. */
    size_t headers = 0, events = 0;
    CHECK(rcl_count_publishers(&node, TOPIC "/lockstep_header", &headers));
    CHECK(rcl_count_publishers(&node, "/lockstep/events/intercept_bench", &events));
    printf("interceptor_publishers %zu %zu\n", headers, events);

    std_msgs__msg__UInt8MultiArray__fini(&b.out);
    std_msgs__msg__UInt8MultiArray__fini(&b.in);
    CHECK(rcl_wait_set_fini(&b.ws));
    CHECK(rcl_subscription_fini(&b.sub, &node));
    CHECK(rcl_publisher_fini(&b.pub, &node));
    CHECK(rcl_node_fini(&node));
    CHECK(rcl_shutdown(&context));
    CHECK(rcl_context_fini(&context));
    return 0;
}
