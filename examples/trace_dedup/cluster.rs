//! Starting timely on this process's workers. One process: timely's own start. Several: the job
//! connects the processes itself and hands timely the connected sockets, since timely's own
//! start polls for peers once a second (a two-process run lost about a second to it, half of a
//! run on a 4 M-packet capture); here a peer is retried every few milliseconds.

use chronobloom::operators::timely;
use std::io::{self, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::thread::sleep;
use std::time::Duration;
use timely::communication::allocator::zero_copy::initialize::initialize_networking_from_sockets;
use timely::communication::allocator::{AllocatorBuilder, ProcessBuilder};
use timely::communication::{Config as Communication, Hooks, WorkerGuards};
use timely::worker::Worker;

/// How long a process waits between attempts to reach a peer.
const RETRY: Duration = Duration::from_millis(5);

/// `timely::execute_from_args` for `-w`/`-n`/`-p`/`-h` arguments, with the processes connected
/// by [`connect`]. (A peer that never comes is the startup watchdog's: `peers::watch_startup`.)
pub fn execute<T, F>(timely_args: Vec<String>, func: F) -> Result<WorkerGuards<T>, String>
where
    T: Send + 'static,
    F: Fn(&mut Worker) -> T + Send + Sync + 'static,
{
    let config = timely::Config::from_args(timely_args.into_iter())?;
    let Communication::Cluster {
        threads,
        process,
        addresses,
        zerocopy,
        ..
    } = config.communication
    else {
        return timely::execute(config, func);
    };
    let sockets = connect(&addresses, process).map_err(|e| {
        format!("failed to connect process {process} to its peers ({addresses:?}): {e}")
    })?;
    let hooks = Hooks::default();
    let allocators = if zerocopy {
        ProcessBuilder::new_bytes_vector(threads, hooks.refill.clone(), hooks.spill.clone())
    } else {
        ProcessBuilder::new_typed_vector(threads, hooks.refill.clone(), hooks.spill.clone())
    };
    let (builders, guard) =
        initialize_networking_from_sockets(allocators, sockets, process, threads, hooks)
            .map_err(|e| format!("failed to initialize networking: {e}"))?;
    let builders = builders.into_iter().map(AllocatorBuilder::Tcp).collect();
    timely::execute::execute_from(builders, Box::new(guard), config.worker, func)
}

/// One socket per process, in process order, `None` at `me`, as timely's own start makes them:
/// process `me` connects to every lower-numbered process and sends its index (a big-endian
/// `u64`), and accepts the higher-numbered ones, reading theirs.
fn connect(addresses: &[String], me: usize) -> io::Result<Vec<Option<TcpStream>>> {
    let listener = match addresses.get(me) {
        Some(a) if me + 1 < addresses.len() => Some(TcpListener::bind(a.as_str())?),
        _ => None,
    };
    let mut sockets: Vec<Option<TcpStream>> = Vec::with_capacity(addresses.len());
    for address in addresses.iter().take(me) {
        let mut stream = loop {
            match TcpStream::connect(address.as_str()) {
                Ok(s) => break s,
                Err(_) => sleep(RETRY),
            }
        };
        stream.set_nodelay(true)?;
        stream.write_all(&(me as u64).to_be_bytes())?;
        sockets.push(Some(stream));
    }
    sockets.push(None);
    sockets.resize_with(addresses.len(), || None);
    if let Some(listener) = listener {
        for _ in me + 1..addresses.len() {
            let (mut stream, _) = listener.accept()?;
            stream.set_nodelay(true)?;
            let mut index = [0u8; 8];
            stream.read_exact(&mut index)?;
            let peer = usize::try_from(u64::from_be_bytes(index)).unwrap_or(usize::MAX);
            match sockets.get_mut(peer) {
                Some(slot @ None) if peer > me => *slot = Some(stream),
                _ => {
                    return Err(io::Error::new(
                        io::ErrorKind::InvalidData,
                        format!("a peer announced itself as process {peer}"),
                    ))
                }
            }
        }
    }
    Ok(sockets)
}
