//! Generic subscriptions and publishers against r2r's compiled-in ones, over real DDS in this process.
//! Every test uses topics named after its own process id, so tests running at once cannot hear each other.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use futures::StreamExt;
use lockstep_ros::generic::{GenericError, GenericNode};
use r2r::std_msgs::msg::{String as StringMsg, UInt8MultiArray};
use r2r::{QosProfile, WrappedTypesupport};

fn topic(name: &str) -> String {
    format!("/lockstep_generic_test_{}_{name}", std::process::id())
}

fn reliable() -> QosProfile {
    QosProfile::default().keep_all().reliable()
}

fn until(what: &str, timeout: Duration, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + timeout;
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn a_generic_subscription_takes_what_a_compiled_publisher_sends_byte_for_byte() {
    let ctx = r2r::Context::create().unwrap();
    let mut node = r2r::Node::create(ctx, "generic_sub_test", "").unwrap();
    let name = topic("chatter");
    let publisher = node
        .create_publisher::<UInt8MultiArray>(&name, reliable())
        .unwrap();
    let generic = GenericNode::new("generic_sub_test", "/").unwrap();
    let mut stream = generic
        .subscribe(&name, "std_msgs/msg/UInt8MultiArray", reliable())
        .unwrap();
    until(
        "the generic subscription to match",
        Duration::from_secs(20),
        || publisher.get_inter_process_subscription_count().unwrap_or(0) >= 1,
    );
    // A burst: every message is taken, in order, even when many wait at one wake-up.
    let sent: Vec<Vec<u8>> = (0..500u32)
        .map(|i| {
            let msg = UInt8MultiArray {
                data: i.to_le_bytes().repeat(1 + (i % 7) as usize),
                ..Default::default()
            };
            publisher.publish(&msg).unwrap();
            msg.to_serialized_bytes().unwrap()
        })
        .collect();
    let got: Vec<Vec<u8>> = futures::executor::block_on(async {
        let mut got = Vec::new();
        while got.len() < sent.len() {
            let next = tokio_timeout(stream.next()).await.expect("a message within 20 s");
            got.push(next.unwrap());
        }
        got
    });
    assert_eq!(got.len(), sent.len());
    assert!(got == sent, "the taken bytes differ from r2r's serialization");
}

#[test]
fn a_generic_publisher_reaches_a_compiled_subscription() {
    let ctx = r2r::Context::create().unwrap();
    let mut node = r2r::Node::create(ctx, "generic_pub_test", "").unwrap();
    let name = topic("greeting");
    let mut received = node.subscribe::<StringMsg>(&name, reliable()).unwrap();
    let generic = GenericNode::new("generic_pub_test", "/").unwrap();
    let publisher = generic
        .publisher(&name, "std_msgs/msg/String", reliable())
        .unwrap();
    until(
        "the compiled subscription to match",
        Duration::from_secs(20),
        || publisher.subscription_count() >= 1,
    );
    for i in 0..20 {
        let cdr = StringMsg {
            data: format!("hello {i}"),
        }
        .to_serialized_bytes()
        .unwrap();
        publisher.publish(&cdr).unwrap();
    }
    let mut got = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(20);
    while got.len() < 20 && Instant::now() < deadline {
        node.spin_once(Duration::from_millis(10));
        while let Some(Some(msg)) = received.next().now_or_never() {
            got.push(msg.data);
        }
    }
    let want: Vec<String> = (0..20).map(|i| format!("hello {i}")).collect();
    assert_eq!(got, want);
}

#[test]
fn an_uninstalled_type_is_an_error_naming_the_package_and_the_paths() {
    let generic = GenericNode::new("generic_err_test", "/").unwrap();
    let err = generic
        .subscribe(&topic("x"), "no_such_msgs/msg/Thing", reliable())
        .unwrap_err();
    assert!(matches!(err, GenericError::TypeSupport(_)), "{err:?}");
    let text = err.to_string();
    assert!(text.contains("package `no_such_msgs`"), "{text}");
    assert!(
        text.contains("libno_such_msgs__rosidl_typesupport_c.so"),
        "{text}"
    );
    // The node still works after a refused request.
    assert!(generic
        .subscribe(&topic("y"), "std_msgs/msg/String", reliable())
        .is_ok());
}

/// CDR (little endian, with its encapsulation header) of a diagnostic_msgs/msg/KeyValue: two strings.
fn key_value_cdr(key: &str, value: &str) -> Vec<u8> {
    let mut out = vec![0, 1, 0, 0];
    for text in [key, value] {
        while (out.len() - 4) % 4 != 0 {
            out.push(0);
        }
        out.extend_from_slice(&(text.len() as u32 + 1).to_le_bytes());
        out.extend_from_slice(text.as_bytes());
        out.push(0);
    }
    out
}

#[test]
fn a_type_not_compiled_in_goes_through_generic_entities_byte_for_byte() {
    // diagnostic_msgs is installed (scripts/requirements.txt) but not in IDL_PACKAGE_FILTER: r2r has no
    // binding for it, so only the run-time type support can carry it.
    let generic = GenericNode::new("generic_any_test", "/").unwrap();
    let name = topic("diagnostics_kv");
    let received = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    {
        let received = received.clone();
        generic
            .subscribe_with(&name, "diagnostic_msgs/msg/KeyValue", reliable(), move |bytes| {
                received.lock().unwrap().push(bytes);
            })
            .unwrap();
    }
    let publisher = generic
        .publisher(&name, "diagnostic_msgs/msg/KeyValue", reliable())
        .unwrap();
    until("the subscription to match", Duration::from_secs(20), || {
        publisher.subscription_count() >= 1
    });
    // The graph, asked through the same node, shows both endpoints with their type.
    let probe = generic.graph_probe();
    let own = generic.node_name();
    assert_eq!(own, "/generic_any_test_generic");
    until(
        "the graph to show both endpoints",
        Duration::from_secs(20),
        || {
            let pubs = probe.publishers(&name).unwrap_or_default();
            let subs = probe.subscriptions(&name).unwrap_or_default();
            pubs.iter().chain(&subs).filter(|e| e.node == own).count() == 2
        },
    );
    let sent: Vec<Vec<u8>> = (0..50)
        .map(|i| key_value_cdr(&format!("key {i}"), &"v".repeat(i)))
        .collect();
    for cdr in &sent {
        publisher.publish(cdr).unwrap();
    }
    until("every message", Duration::from_secs(20), || {
        received.lock().unwrap().len() >= sent.len()
    });
    assert!(
        *received.lock().unwrap() == sent,
        "the taken bytes differ from the sent ones"
    );
}

#[test]
fn an_unsubscribed_sink_hears_nothing_more_and_its_reader_is_gone() {
    let generic = GenericNode::new("generic_unsub_test", "/").unwrap();
    let name = topic("unsubscribe");
    let publisher = generic
        .publisher(&name, "diagnostic_msgs/msg/KeyValue", reliable())
        .unwrap();
    let counts: Vec<std::sync::Arc<std::sync::atomic::AtomicUsize>> =
        (0..2).map(|_| std::sync::Arc::default()).collect();
    let ids: Vec<_> = (counts.iter())
        .map(|count| {
            let count = count.clone();
            generic
                .subscribe_with(&name, "diagnostic_msgs/msg/KeyValue", reliable(), move |_| {
                    count.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                })
                .unwrap()
        })
        .collect();
    until("both subscriptions to match", Duration::from_secs(20), || {
        publisher.subscription_count() >= 2
    });
    // Unsubscribe the first while messages flow (the take thread may be waiting on or taking from it).
    let load = |n: usize| (0..n).map(|i| key_value_cdr("k", &i.to_string()));
    for cdr in load(200) {
        publisher.publish(&cdr).unwrap();
    }
    assert!(generic.unsubscribe(ids[0]));
    assert!(!generic.unsubscribe(ids[0]), "a second unsubscribe is a no-op");
    let frozen = counts[0].load(std::sync::atomic::Ordering::SeqCst);
    until("the first reader to be deleted", Duration::from_secs(20), || {
        publisher.subscription_count() == 1
    });
    for cdr in load(100) {
        publisher.publish(&cdr).unwrap();
    }
    until("the second sink to get all 300", Duration::from_secs(20), || {
        counts[1].load(std::sync::atomic::Ordering::SeqCst) >= 300
    });
    assert_eq!(counts[0].load(std::sync::atomic::Ordering::SeqCst), frozen);
    assert_eq!(generic.subscription_count(), 1);
    // Subscribing again to the same topic works after an unsubscribe.
    let again = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    {
        let again = again.clone();
        generic
            .subscribe_with(&name, "diagnostic_msgs/msg/KeyValue", reliable(), move |_| {
                again.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            })
            .unwrap();
    }
    until("the new subscription to match", Duration::from_secs(20), || {
        publisher.subscription_count() == 2
    });
    publisher.publish(&key_value_cdr("k", "last")).unwrap();
    until("the new sink to hear it", Duration::from_secs(20), || {
        again.load(std::sync::atomic::Ordering::SeqCst) == 1
    });
}

#[test]
fn a_generic_node_lives_in_the_namespace_given() {
    let generic = GenericNode::new("generic_ns_test", "/robot_one").unwrap();
    assert_eq!(generic.node_name(), "/robot_one/generic_ns_test_generic");
}

/// `fut` or `None` after 20 s, without a tokio runtime (the stream is a futures channel).
async fn tokio_timeout<F: std::future::Future>(fut: F) -> Option<F::Output> {
    use futures::future::{select, Either};
    let deadline = Instant::now() + Duration::from_secs(20);
    let timer = futures::future::poll_fn(move |cx| {
        if Instant::now() >= deadline {
            std::task::Poll::Ready(())
        } else {
            let waker = cx.waker().clone();
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(50));
                waker.wake();
            });
            std::task::Poll::Pending
        }
    });
    futures::pin_mut!(fut);
    futures::pin_mut!(timer);
    match select(fut, timer).await {
        Either::Left((out, _)) => Some(out),
        Either::Right(_) => None,
    }
}

use futures::FutureExt as _;

#[test]
fn the_probe_lists_services_with_their_types() {
    let ctx = r2r::Context::create().unwrap();
    let mut node = r2r::Node::create(ctx, "generic_services_test", "").unwrap();
    let name = topic("trigger_me");
    let _service = node
        .create_service::<r2r::std_srvs::srv::Trigger::Service>(&name, QosProfile::default())
        .unwrap();
    let generic = GenericNode::new("generic_services_test", "/").unwrap();
    let probe = generic.graph_probe();
    let mut found = Vec::new();
    until("the service in the graph", Duration::from_secs(20), || {
        found = probe.services().unwrap();
        found.iter().any(|(n, _)| *n == name)
    });
    let types = &found.iter().find(|(n, _)| *n == name).unwrap().1;
    assert_eq!(types, &vec!["std_srvs/srv/Trigger".to_owned()]);
    assert!(found.windows(2).all(|w| w[0] <= w[1]), "sorted by name");
}
