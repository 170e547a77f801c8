//! Raw network actions of the probe: a TCP connect over `wasi:sockets`
//! and a GET over `wasi:http`, reporting the WASI error code on failure.

use wasip2::http::outgoing_handler;
use wasip2::http::types::{Fields, Method, OutgoingBody, OutgoingRequest, Scheme};
use wasip2::io::streams::StreamError;
use wasip2::sockets::network::{
    IpAddress, IpAddressFamily, IpSocketAddress, Ipv4SocketAddress, Ipv6SocketAddress,
};
use wasip2::sockets::{instance_network, ip_name_lookup, tcp_create_socket};

fn socket_addr(ip: IpAddress, port: u16) -> IpSocketAddress {
    match ip {
        IpAddress::Ipv4(address) => IpSocketAddress::Ipv4(Ipv4SocketAddress { port, address }),
        IpAddress::Ipv6(address) => IpSocketAddress::Ipv6(Ipv6SocketAddress {
            port,
            address,
            flow_info: 0,
            scope_id: 0,
        }),
    }
}

fn resolve(host: &str) -> Result<IpAddress, String> {
    // A literal needs no lookup (which a grant of addresses leaves off).
    match host.parse::<std::net::IpAddr>() {
        Ok(std::net::IpAddr::V4(v4)) => {
            let [a, b, c, d] = v4.octets();
            return Ok(IpAddress::Ipv4((a, b, c, d)));
        }
        Ok(std::net::IpAddr::V6(v6)) => {
            let [a, b, c, d, e, f, g, h] = v6.segments();
            return Ok(IpAddress::Ipv6((a, b, c, d, e, f, g, h)));
        }
        Err(_) => {}
    }
    let network = instance_network::instance_network();
    let stream = ip_name_lookup::resolve_addresses(&network, host)
        .map_err(|e| format!("resolve {host}: {e:?}"))?;
    loop {
        match stream.resolve_next_address() {
            Ok(Some(ip)) => return Ok(ip),
            Ok(None) => return Err(format!("resolve {host}: no address")),
            Err(wasip2::sockets::network::ErrorCode::WouldBlock) => stream.subscribe().block(),
            Err(e) => return Err(format!("resolve {host}: {e:?}")),
        }
    }
}

pub fn connect(host: &str, port: u16, send: Option<&str>) -> Result<String, String> {
    let ip = resolve(host)?;
    let family = match ip {
        IpAddress::Ipv4(_) => IpAddressFamily::Ipv4,
        IpAddress::Ipv6(_) => IpAddressFamily::Ipv6,
    };
    let socket = tcp_create_socket::create_tcp_socket(family)
        .map_err(|e| format!("create socket: {e:?}"))?;
    let network = instance_network::instance_network();
    socket
        .start_connect(&network, socket_addr(ip, port))
        .map_err(|e| format!("connect: {e:?}"))?;
    let (input, output) = loop {
        match socket.finish_connect() {
            Ok(streams) => break streams,
            Err(wasip2::sockets::network::ErrorCode::WouldBlock) => socket.subscribe().block(),
            Err(e) => return Err(format!("connect: {e:?}")),
        }
    };
    if let Some(text) = send {
        output
            .blocking_write_and_flush(text.as_bytes())
            .map_err(|e| format!("send: {e:?}"))?;
    }
    let reply = match input.blocking_read(256) {
        Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
        Err(StreamError::Closed) => String::new(),
        Err(e) => return Err(format!("read: {e:?}")),
    };
    Ok(format!("connected; reply: {reply}"))
}

pub fn http_get(scheme: &str, authority: &str, path: &str) -> Result<String, String> {
    let request = OutgoingRequest::new(Fields::new());
    let scheme = match scheme {
        "http" => Scheme::Http,
        "https" => Scheme::Https,
        other => Scheme::Other(other.to_owned()),
    };
    request
        .set_method(&Method::Get)
        .map_err(|()| "method".to_string())?;
    request
        .set_scheme(Some(&scheme))
        .map_err(|()| "scheme refused by wasi:http".to_string())?;
    request
        .set_authority(Some(authority))
        .map_err(|()| "authority refused by wasi:http".to_string())?;
    request
        .set_path_with_query(Some(path))
        .map_err(|()| "path refused by wasi:http".to_string())?;
    let body = request.body().map_err(|()| "body".to_string())?;
    let pending = outgoing_handler::handle(request, None).map_err(|e| format!("{e:?}"))?;
    OutgoingBody::finish(body, None).map_err(|e| format!("{e:?}"))?;
    pending.subscribe().block();
    let response = match pending.get() {
        Some(Ok(Ok(r))) => r,
        Some(Ok(Err(e))) => return Err(format!("{e:?}")),
        _ => return Err("no response".into()),
    };
    let status = response.status();
    let incoming = response.consume().map_err(|()| "consume".to_string())?;
    let stream = incoming.stream().map_err(|()| "stream".to_string())?;
    let mut text = Vec::new();
    loop {
        match stream.blocking_read(4096) {
            Ok(bytes) => text.extend_from_slice(&bytes),
            Err(StreamError::Closed) => break,
            Err(e) => return Err(format!("read body: {e:?}")),
        }
    }
    Ok(format!("{status} {}", String::from_utf8_lossy(&text)))
}
