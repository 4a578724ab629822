//! Keeps a node's parameter services alive. r2r serves all of them (`~/get_parameters`, `~/set_parameters`,
//! ...) from one future that panics when a reply cannot be sent. rmw_fastrtps refuses to send a reply
//! (`RCL_RET_TIMEOUT`) when it has not discovered the caller's response reader within 100 ms of the request,
//! which happens on a loaded machine. That one lost reply used to take every parameter service of the node
//! down for good. Here the services are made again after such a panic. The caller whose reply was lost asks
//! again, as with any lost reply, and is answered.

use futures::channel::mpsc;
use futures::stream::{BoxStream, Stream, StreamExt};
use std::future::Future;

use crate::error::Result;

/// One incarnation of the services: the future serving them and the stream of changes made from outside.
pub type Incarnation<F, S> = (F, S);

/// Serve the services made by `make` on the current tokio runtime. When their future panics, `make` is
/// called again (after `on_restart` is told why) and the new services take over. Returns one stream of the
/// changes made from outside through any incarnation. Ends when a future ends without panicking (the
/// node is going away) or `make` fails.
pub fn supervise<F, S, M, R>(mut make: M, mut on_restart: R) -> Result<BoxStream<'static, S::Item>>
where
    M: FnMut() -> Result<Incarnation<F, S>> + Send + 'static,
    R: FnMut(String) + Send + 'static,
    F: Future<Output = ()> + Send + 'static,
    S: Stream + Send + 'static,
    S::Item: Send + 'static,
{
    let (serve, changes) = make()?;
    let (tx, rx) = mpsc::unbounded();
    forward(changes, tx.clone());
    tokio::spawn(async move {
        let mut serve = serve;
        loop {
            match tokio::spawn(serve).await {
                Err(e) if e.is_panic() => {
                    on_restart(panic_text(e.into_panic()));
                    match make() {
                        Ok((next, changes)) => {
                            forward(changes, tx.clone());
                            serve = next;
                        }
                        Err(e) => {
                            on_restart(format!("the parameter services could not be made again: {e}"));
                            return;
                        }
                    }
                }
                _ => return,
            }
        }
    });
    Ok(rx.boxed())
}

/// Send every item of `changes` into `tx` until either ends.
fn forward<S>(changes: S, tx: mpsc::UnboundedSender<S::Item>)
where
    S: Stream + Send + 'static,
    S::Item: Send + 'static,
{
    tokio::spawn(async move {
        let mut changes = std::pin::pin!(changes);
        while let Some(change) = changes.next().await {
            if tx.unbounded_send(change).is_err() {
                return;
            }
        }
    });
}

fn panic_text(payload: Box<dyn std::any::Any + Send>) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::{Arc, Mutex};
    use std::time::Duration;

    /// Incarnation `n` sends change `n`, then panics on the first (as r2r's does when a reply fails) or ends.
    #[tokio::test(flavor = "current_thread")]
    async fn a_panic_brings_the_services_back_and_their_changes_still_arrive() {
        let made = Arc::new(AtomicUsize::new(0));
        let reasons = Arc::new(Mutex::new(Vec::new()));
        let m = made.clone();
        let r = reasons.clone();
        let mut changes = supervise(
            move || {
                let n = m.fetch_add(1, Ordering::SeqCst);
                let (tx, rx) = mpsc::unbounded::<usize>();
                let serve = async move {
                    let _ = tx.unbounded_send(n);
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    assert!(
                        n != 0,
                        "could not send reply to set parameter request: RCL_RET_TIMEOUT"
                    );
                };
                Ok((serve, rx))
            },
            move |why| r.lock().unwrap().push(why),
        )
        .unwrap();
        let first_two: Vec<usize> =
            tokio::time::timeout(Duration::from_secs(30), (&mut changes).take(2).collect())
                .await
                .unwrap();
        assert_eq!(first_two, vec![0, 1]);
        assert_eq!(made.load(Ordering::SeqCst), 2);
        let reasons = reasons.lock().unwrap().clone();
        assert_eq!(reasons.len(), 1, "{reasons:?}");
        assert!(reasons[0].contains("RCL_RET_TIMEOUT"), "{reasons:?}");
    }
}
