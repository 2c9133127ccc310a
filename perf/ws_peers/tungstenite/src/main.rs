//! The tokio-tungstenite peer of perf/compare_ws: an echo on /test/ws.
//!
//!   tungstenite-echo 127.0.0.1:PORT
//!
//! tokio's current-thread runtime (one thread, as the other servers), a task
//! per connection; the handshake refuses any path but /test/ws with a 404.
//! Every text or binary message goes back as tokio-tungstenite's echo example
//! sends it: the stream of data messages forwarded into the sink, which
//! feeds (buffers) each one and flushes when no further message is ready, so
//! echoes of messages that arrived together leave together. Pings are
//! answered by tungstenite itself. No compression (not built in).
use futures_util::{future, StreamExt, TryStreamExt};
use tokio::net::{TcpListener, TcpStream};
use tokio_tungstenite::tungstenite::handshake::server::{ErrorResponse, Request, Response};
use tokio_tungstenite::tungstenite::http::StatusCode;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;

async fn serve(stream: TcpStream) {
    let _ = stream.set_nodelay(true);
    let check = |req: &Request, resp: Response| -> Result<Response, ErrorResponse> {
        if req.uri().path() == "/test/ws" {
            Ok(resp)
        } else {
            let mut e = ErrorResponse::new(None);
            *e.status_mut() = StatusCode::NOT_FOUND;
            Err(e)
        }
    };
    let config = WebSocketConfig::default()
        .max_message_size(Some(64 << 20))
        .max_frame_size(Some(64 << 20));
    let ws = match tokio_tungstenite::accept_hdr_async_with_config(stream, check, Some(config)).await {
        Ok(ws) => ws,
        Err(_) => return,
    };
    let (write, read) = ws.split();
    let _ = read
        .try_filter(|m| future::ready(m.is_text() || m.is_binary()))
        .forward(write)
        .await;
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let addr = std::env::args().nth(1).unwrap_or_else(|| "127.0.0.1:8080".to_string());
    let listener = TcpListener::bind(&addr).await.expect("bind");
    println!("tokio-tungstenite echo ready on {}/test/ws", listener.local_addr().unwrap());
    loop {
        if let Ok((stream, _)) = listener.accept().await {
            tokio::spawn(serve(stream));
        }
    }
}
