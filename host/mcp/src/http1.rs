//! Reading one HTTP/1.1 response from a stream: the status line, the
//! headers, and a body framed by Content-Length, chunked encoding, or the
//! end of the connection. The admin client and `warden bench --mcp` use
//! it; the server side is axum's.

use std::io::{Error, ErrorKind};

use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncReadExt};

/// Bodies larger than this are refused.
const MAX_BODY: usize = 16 << 20;

/// One response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    pub status: u16,
    /// Header names lower-cased.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Response {
    /// The first header of that (lower-case) name.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

fn bad(message: impl Into<String>) -> Error {
    Error::new(ErrorKind::InvalidData, message.into())
}

async fn line<R: AsyncBufRead + Unpin>(reader: &mut R) -> std::io::Result<String> {
    let mut line = String::new();
    if reader.read_line(&mut line).await? == 0 {
        return Err(Error::new(
            ErrorKind::UnexpectedEof,
            "the connection closed mid-response",
        ));
    }
    Ok(line.trim_end().to_owned())
}

/// Reads one response; leaves the stream at the next one (keep-alive).
pub async fn read_response<R: AsyncBufRead + Unpin>(reader: &mut R) -> std::io::Result<Response> {
    let status_line = line(reader).await?;
    let status = status_line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| bad(format!("not an HTTP status line: {status_line:?}")))?;
    let mut headers = Vec::new();
    loop {
        let header = line(reader).await?;
        if header.is_empty() {
            break;
        }
        let (name, value) = header.split_once(':').unwrap_or((&header, ""));
        headers.push((name.trim().to_ascii_lowercase(), value.trim().to_owned()));
    }
    let mut response = Response {
        status,
        headers,
        body: Vec::new(),
    };
    let chunked = response
        .header("transfer-encoding")
        .is_some_and(|v| v.eq_ignore_ascii_case("chunked"));
    let length = response.header("content-length").map(str::parse::<usize>);
    let bodiless = status < 200 || status == 204 || status == 304;
    if bodiless {
        return Ok(response);
    }
    if chunked {
        loop {
            let size = line(reader).await?;
            let n = usize::from_str_radix(size.trim(), 16)
                .map_err(|e| bad(format!("bad chunk size {size:?}: {e}")))?;
            if response.body.len() + n > MAX_BODY {
                return Err(bad("the response body is too large"));
            }
            let mut chunk = vec![0; n + 2];
            reader.read_exact(&mut chunk).await?;
            if n == 0 {
                break;
            }
            response.body.extend_from_slice(&chunk[..n]);
        }
    } else if let Some(length) = length {
        let n = length.map_err(|e| bad(format!("bad content-length: {e}")))?;
        if n > MAX_BODY {
            return Err(bad("the response body is too large"));
        }
        response.body.resize(n, 0);
        reader.read_exact(&mut response.body).await?;
    } else {
        reader
            .take(MAX_BODY as u64)
            .read_to_end(&mut response.body)
            .await?;
    }
    Ok(response)
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn parse(raw: &[u8]) -> std::io::Result<(u16, Vec<u8>)> {
        let mut reader = tokio::io::BufReader::new(raw);
        read_response(&mut reader).await.map(|r| (r.status, r.body))
    }

    #[tokio::test]
    async fn chunked_and_plain_responses_parse() {
        let plain = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}";
        assert_eq!(parse(plain).await.unwrap(), (200, b"{}".to_vec()));
        let chunked =
            b"HTTP/1.1 404 Not Found\r\ntransfer-encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n";
        assert_eq!(parse(chunked).await.unwrap(), (404, b"{}".to_vec()));
        assert!(parse(b"garbage").await.is_err());
    }

    #[tokio::test]
    async fn keep_alive_leaves_the_next_response() {
        let two = b"HTTP/1.1 202 Accepted\r\ncontent-length: 0\r\nmcp-session-id: s1\r\n\r\nHTTP/1.1 200 OK\r\ncontent-length: 1\r\n\r\nx";
        let mut reader = tokio::io::BufReader::new(&two[..]);
        let first = read_response(&mut reader).await.unwrap();
        assert_eq!(
            (first.status, first.header("mcp-session-id")),
            (202, Some("s1"))
        );
        let second = read_response(&mut reader).await.unwrap();
        assert_eq!((second.status, second.body), (200, b"x".to_vec()));
    }
}
