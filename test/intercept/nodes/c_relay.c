/* An unmodified ROS 2 node in plain C over rcl, no client library (rclcpp and rclc call the same rcl
 * functions): node `c_relay`, takes std_msgs/msg/Float64 on /c_in and publishes data*3 on /c_out for each
 * message taken. One rcl_wait_set with the subscription only (100 ms timeout), one rcl_take per wake-up.
 * SIGINT/SIGTERM set a flag: the loop ends, everything is finalized, rcl_shutdown, and it prints
 * "c_relay: stopped cleanly". Built by test/intercept/test_trace_c_and_r2r.py. */
#include <signal.h>
#include <stdio.h>

#include <rcl/error_handling.h>
#include <rcl/rcl.h>
#include <rosidl_runtime_c/message_type_support_struct.h>
#include <std_msgs/msg/float64.h>

static volatile sig_atomic_t stop = 0;

static void on_signal(int sig) {
    (void)sig;
    stop = 1;
}

#define CHECK(call)                                                                                      \
    do {                                                                                                 \
        rcl_ret_t ret_ = (call);                                                                         \
        if (ret_ != RCL_RET_OK) {                                                                        \
            fprintf(stderr, "c_relay: %s failed (%d): %s\n", #call, (int)ret_, rcl_get_error_string().str); \
            return 1;                                                                                    \
        }                                                                                                \
    } while (0)

int main(int argc, char **argv) {
    struct sigaction action = {0};
    action.sa_handler = on_signal;
    sigaction(SIGINT, &action, NULL);
    sigaction(SIGTERM, &action, NULL);

    rcl_allocator_t allocator = rcl_get_default_allocator();
    rcl_init_options_t init_options = rcl_get_zero_initialized_init_options();
    CHECK(rcl_init_options_init(&init_options, allocator));
    rcl_context_t context = rcl_get_zero_initialized_context();
    CHECK(rcl_init(argc, (const char *const *)argv, &init_options, &context));

    rcl_node_t node = rcl_get_zero_initialized_node();
    rcl_node_options_t node_options = rcl_node_get_default_options();
    CHECK(rcl_node_init(&node, "c_relay", "", &context, &node_options));

    const rosidl_message_type_support_t *type = ROSIDL_GET_MSG_TYPE_SUPPORT(std_msgs, msg, Float64);
    rcl_subscription_t sub = rcl_get_zero_initialized_subscription();
    rcl_subscription_options_t sub_options = rcl_subscription_get_default_options();
    sub_options.qos.depth = 100; /* reliable, volatile (the default profile), room for a burst */
    CHECK(rcl_subscription_init(&sub, &node, type, "/c_in", &sub_options));
    rcl_publisher_t pub = rcl_get_zero_initialized_publisher();
    rcl_publisher_options_t pub_options = rcl_publisher_get_default_options();
    pub_options.qos.depth = 100;
    CHECK(rcl_publisher_init(&pub, &node, type, "/c_out", &pub_options));

    rcl_wait_set_t wait_set = rcl_get_zero_initialized_wait_set();
    CHECK(rcl_wait_set_init(&wait_set, 1, 0, 0, 0, 0, 0, &context, allocator));
    std_msgs__msg__Float64 in, out;
    std_msgs__msg__Float64__init(&in);
    std_msgs__msg__Float64__init(&out);
    printf("c_relay: running\n");
    fflush(stdout);

    while (!stop) {
        CHECK(rcl_wait_set_clear(&wait_set));
        CHECK(rcl_wait_set_add_subscription(&wait_set, &sub, NULL));
        rcl_ret_t ret = rcl_wait(&wait_set, RCL_MS_TO_NS(100));
        if (ret == RCL_RET_TIMEOUT) {
            continue;
        }
        CHECK(ret);
        if (wait_set.subscriptions[0] == NULL) {
            continue;
        }
        rmw_message_info_t info = rmw_get_zero_initialized_message_info();
        ret = rcl_take(&sub, &in, &info, NULL);
        if (ret == RCL_RET_SUBSCRIPTION_TAKE_FAILED) {
            continue;
        }
        CHECK(ret);
        out.data = in.data * 3.0;
        CHECK(rcl_publish(&pub, &out, NULL));
    }

    std_msgs__msg__Float64__fini(&in);
    std_msgs__msg__Float64__fini(&out);
    CHECK(rcl_wait_set_fini(&wait_set));
    CHECK(rcl_publisher_fini(&pub, &node));
    CHECK(rcl_subscription_fini(&sub, &node));
    CHECK(rcl_node_fini(&node));
    CHECK(rcl_shutdown(&context));
    CHECK(rcl_context_fini(&context));
    CHECK(rcl_init_options_fini(&init_options));
    printf("c_relay: stopped cleanly\n");
    return 0;
}
