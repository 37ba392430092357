use std::{
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
        for (id, addr) in &node_state.nodes {
            if *id == node_state.node_id {
                continue;
            }

            let mut connection = P::Client::connect(addr.clone(), "sync")
                .await
                .ok_or(GlobalCollectiveError::PeerLost(*id))?;
            let msg = SyncRequest(node_state.node_id);
            let sync_bytes = rmp_serde::to_vec(&msg).unwrap();
            connection
                .send(Message::new(sync_bytes.into()))
                .await
                .map_err(|_| GlobalCollectiveError::PeerLost(*id))?;
        }
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
        // scaling-lab patch: a peer that closed the connection (or sent garbage) is logged and
        // ignored (was: unwrap, a panic in the server task).
        let Ok(Some(msg)) = channel.recv().await else {
            log::warn!("sync connection closed before its request");
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
