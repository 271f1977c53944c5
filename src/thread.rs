//! Named threads that are joined when their handle is dropped. Every thread in the server is
//! started through [`JoinOnDrop::spawn`], so none outlives the value that owns it.

use std::thread;

/// A named thread that is joined when this handle is dropped. Drop whatever the thread waits on
/// (a channel sender, a socket) before the handle, or the join waits for it.
pub(crate) struct JoinOnDrop(Option<thread::JoinHandle<()>>);

impl JoinOnDrop {
    pub(crate) fn spawn(name: &str, f: impl FnOnce() + Send + 'static) -> JoinOnDrop {
        let handle = thread::Builder::new()
            .name(name.to_string())
            .spawn(f)
            .expect("the OS refused to start a thread");
        JoinOnDrop(Some(handle))
    }

    pub(crate) fn is_finished(&self) -> bool {
        self.0.as_ref().is_none_or(thread::JoinHandle::is_finished)
    }

    /// Lets the thread run on unjoined. Only for a thread blocked on a resource another process
    /// holds (a pipe a daemonised grandchild kept open): joining would hang the server.
    pub(crate) fn detach(mut self) {
        self.0.take();
    }
}

impl Drop for JoinOnDrop {
    fn drop(&mut self) {
        if let Some(handle) = self.0.take() {
            // A panic in the thread was already reported by the panic hook.
            let _ = handle.join();
        }
    }
}
