use std::{
    collections::HashMap,
    marker::PhantomData,
    sync::{Arc, Mutex},
    vec,
};

use burn_communication::{CommunicationChannel, Message, Protocol, ProtocolClient};
use serde::{Deserialize, Serialize};
use tokio::sync::{Notify, RwLock};

use crate::{NodeId, global::shared::GlobalCollectiveError, node::base::NodeState};

/// Handles the status of sync requests from other nodes
pub(crate) struct SyncService<P: Protocol> {
    /// Current node's state, shared with the thread that does aggregations
    node_state: Arc<RwLock<Option<NodeState>>>,
    /// The number of peers that have requested to sync with us since the last successful sync.
    syncing_peers: Mutex<Vec<NodeId>>,
    /// Notification on each incoming sync request
    sync_notif: Notify,
    /// scaling-lab patch: one open sync connection per peer, reused by every barrier. The
    /// original connected anew for every sync (two per training step here), so thousands of
    /// sockets a second went into TIME_WAIT until the ephemeral ports ran out and `connect`
    /// failed (a panic, before the patch below) — on loopback within a few seconds of training.
    connections: tokio::sync::Mutex<HashMap<NodeId, <P::Client as ProtocolClient>::Channel>>,

    _p: PhantomData<P>,
}

#[derive(Debug, Serialize, Deserialize)]
struct SyncRequest(NodeId);

impl<P: Protocol> SyncService<P> {
    pub fn new(node_state: Arc<RwLock<Option<NodeState>>>) -> Self {
        Self {
            node_state,
            syncing_peers: Mutex::new(vec![]),
            sync_notif: Notify::new(),
            connections: tokio::sync::Mutex::new(HashMap::new()),
            _p: PhantomData,
        }
    }

    fn add_syncing_peer(&self, peer: NodeId) {
        let mut syncing_peers = self.syncing_peers.lock().unwrap();
        syncing_peers.push(peer);
    }

    /// Sync with all peers.
    // scaling-lab patch: returns `PeerLost` when a peer cannot be reached (was: panics).
    pub async fn sync(&self) -> Result<(), GlobalCollectiveError> {
        // we can't sync while we register
        let node_state = self.node_state.read().await;
        let node_state = node_state
            .as_ref()
            .expect("Trying to sync a node before having registered to the orchestrator");

        // this peer is syncing
        self.add_syncing_peer(node_state.node_id);
        let mut connections = self.connections.lock().await;
        for (id, addr) in &node_state.nodes {
            if *id == node_state.node_id {
                continue;
            }

            // scaling-lab patch: reuse the peer's connection (see `connections`).
            if !connections.contains_key(id) {
                let connection = P::Client::connect(addr.clone(), "sync")
                    .await
                    .ok_or(GlobalCollectiveError::PeerLost(*id))?;
                connections.insert(*id, connection);
            }
            let connection = connections.get_mut(id).expect("inserted above");
            let msg = SyncRequest(node_state.node_id);
            let sync_bytes = rmp_serde::to_vec(&msg).unwrap();
            if connection
                .send(Message::new(sync_bytes.into()))
                .await
                .is_err()
            {
                connections.remove(id);
                return Err(GlobalCollectiveError::PeerLost(*id));
            }
        }
        drop(connections);
        loop {
            // scaling-lab patch: register interest in the notification BEFORE checking the list.
            // `notify_waiters()` stores no permit, so a request that arrived between the check and
            // `notified().await` was a lost wake-up (a hang).
            let mut notified = std::pin::pin!(self.sync_notif.notified());
            notified.as_mut().enable();
            {
                // scaling-lab patch: the original compared a `.to_vec()` copy of the shared list
                // with the node ids and cleared the copy, so the shared list was never reset and
                // the second barrier waited for [0,0,1,1] == [0,1] forever. Now: once every node's
                // request is present, remove exactly one request per node from the SHARED list (a
                // fast peer's request for the next barrier may already be there and must stay).
                let mut syncing_peers = self.syncing_peers.lock().unwrap();
                let all_node_ids = node_state.nodes.keys().cloned().collect::<Vec<_>>();
                if all_node_ids.iter().all(|id| syncing_peers.contains(id)) {
                    // all nodes have synced
                    for id in &all_node_ids {
                        if let Some(pos) = syncing_peers.iter().position(|p| p == id) {
                            syncing_peers.remove(pos);
                        }
                    }
                    return Ok(());
                }
            }
            // Wait for the next sync to come in
            notified.await
        }
    }

    pub async fn handle_sync_connection<C: CommunicationChannel>(&self, mut channel: C) {
        // scaling-lab patch: one connection carries every sync request of its peer (it was one
        // connection per request); a peer that closed the connection (or sent garbage) ends it
        // (was: unwrap, a panic in the server task).
        loop {
            let Ok(Some(msg)) = channel.recv().await else {
                return;
            };
            let Ok(msg) = rmp_serde::from_slice::<SyncRequest>(&msg.data) else {
                log::warn!("sync connection sent an invalid request");
                return;
            };

            self.add_syncing_peer(msg.0);

            self.sync_notif.notify_waiters();
        }
    }
}
