//! How many records wait for the audit writer now, for the metrics (`telemetry`). It reads; it changes nothing.

impl super::State {
    /// Records queued for the audit writer and not yet taken by it.
    pub fn audit_queue_depth(&self) -> usize {
        self.room.depth()
    }
}
