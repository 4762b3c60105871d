//! Counts every store operation of a statement (see `metrics::counting`),
//! whatever the store: LWTs and reads per statement are the cost users see.

use std::sync::Arc;

use futures::future::BoxFuture;

use super::layer::{Layer, Layered};
use super::{Cas, Store, StoreResult};
use crate::metrics::{note_lwt, note_read, note_write};

/// The counting layer.
pub struct Counting;

pub type CountingStore = Layered<Counting>;

impl Layered<Counting> {
    pub fn new(inner: Arc<dyn Store>) -> CountingStore {
        Layered::wrap(inner, Counting)
    }
}

impl Layer for Counting {
    fn lwt<'a, T: Send + 'a>(
        &'a self,
        _op: &'static str,
        _space: &'a str,
        _key: &'a [u8],
        write: BoxFuture<'a, StoreResult<Cas<T>>>,
    ) -> BoxFuture<'a, StoreResult<Cas<T>>> {
        note_lwt();
        write
    }

    fn read<'a, T: Send + 'a>(
        &'a self,
        _op: &'static str,
        _space: &'a str,
        _key: &'a [u8],
        read: BoxFuture<'a, StoreResult<T>>,
    ) -> BoxFuture<'a, StoreResult<T>> {
        note_read();
        read
    }

    fn write<'a>(
        &'a self,
        _op: &'static str,
        _space: &'a str,
        _key: &'a [u8],
        write: BoxFuture<'a, StoreResult<()>>,
    ) -> BoxFuture<'a, StoreResult<()>> {
        note_write();
        write
    }
}
