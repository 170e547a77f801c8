//! The git tools against a real Docker engine and the git image: local
//! operations on a repository owned by another uid, structured results,
//! repository config that would run programs, and clone, fetch and push
//! against loopback git servers on the bridge gateway (the only address
//! a container can reach on the host).

mod fixture;
mod judged;
mod local;
mod protocols;
mod remote;
