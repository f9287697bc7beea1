//! `Live<T>`: a value that is replaced whole (a reload), while whoever took the previous one keeps it until done.
//! A reader takes an `Arc` under a read lock held for the clone only; a writer swaps the `Arc`. It does not merge,
//! compare or validate what it holds: the caller validates the new value before it is stored.

use std::sync::{Arc, RwLock};

pub(crate) struct Live<T>(RwLock<Arc<T>>);

impl<T> Live<T> {
    pub(crate) fn new(value: Arc<T>) -> Self {
        Self(RwLock::new(value))
    }

    /// The value as it is now; later stores do not change it.
    pub(crate) fn load(&self) -> Arc<T> {
        Arc::clone(&self.0.read().unwrap_or_else(|p| p.into_inner()))
    }

    /// Replaces the value for every later `load`.
    pub(crate) fn store(&self, value: Arc<T>) {
        *self.0.write().unwrap_or_else(|p| p.into_inner()) = value;
    }
}
