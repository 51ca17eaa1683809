//! Which URLs an authorization may fetch, post to or open, judged against the MCP server's
//! own address.
//!
//! Every URL a server hands us (resource metadata, authorization server, its endpoints) is
//! https, or http only when both it and the MCP server are on loopback. Its host is never
//! link-local (cloud metadata services answer there) nor unroutable (unspecified,
//! multicast, broadcast, reserved), and is private or loopback only when the MCP server's
//! own host is in that class. Hosts are judged as addresses, never as text: the URL parser
//! turns decimal, octal and hex IPv4 forms and trailing dots into addresses, IPv4-mapped
//! and NAT64 IPv6 addresses are judged by the IPv4 address inside, and `localhost` names
//! are loopback. Host names are judged where they are resolved: [`PinnedResolver`] is the
//! HTTP client's resolver, and connects only to the addresses the policy allows, so a name
//! that resolves to a private address (now or after a rebinding) is refused too.

use std::collections::BTreeSet;
use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use url::{Host, Url};

/// How long resolving the MCP server's own name may take.
const SERVER_LOOKUP_DEADLINE: Duration = Duration::from_secs(10);

/// Where an address is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum AddressClass {
    /// The internet.
    Public,
    /// A private network: 10/8, 172.16/12, 192.168/16, 100.64/10 (shared), 198.18/15,
    /// 192.0.0/24, fc00::/7, fec0::/10, 64:ff9b:1::/48.
    Private,
    /// This machine: 127/8, ::1, `localhost`.
    Loopback,
    /// 169.254/16 and fe80::/10, where cloud metadata services answer.
    LinkLocal,
    /// Not a unicast destination: 0/8, ::, multicast, broadcast, 240/4, `::a.b.c.d`.
    Unroutable,
}

impl AddressClass {
    /// The class of an address.
    pub fn of(address: IpAddr) -> AddressClass {
        match address {
            IpAddr::V4(v4) => class_of_v4(v4),
            IpAddr::V6(v6) => class_of_v6(v6),
        }
    }
}

fn class_of_v4(address: Ipv4Addr) -> AddressClass {
    let [a, b, c, _] = address.octets();
    if address.is_loopback() {
        AddressClass::Loopback
    } else if address.is_link_local() {
        AddressClass::LinkLocal
    } else if a == 0 || address.is_multicast() || a >= 240 {
        // 0/8 "this network" (0.0.0.0 reaches this machine on Linux), 224/4, 240/4 and the
        // broadcast address in it.
        AddressClass::Unroutable
    } else if address.is_private()
        || (a == 100 && (64..128).contains(&b))
        || (a == 198 && (18..20).contains(&b))
        || (a == 192 && b == 0 && c == 0)
    {
        AddressClass::Private
    } else {
        AddressClass::Public
    }
}

fn class_of_v6(address: Ipv6Addr) -> AddressClass {
    if let Some(v4) = address.to_ipv4_mapped() {
        return class_of_v4(v4);
    }
    if address.is_loopback() {
        return AddressClass::Loopback;
    }
    let s = address.segments();
    let embedded_v4 = || Ipv4Addr::from(u32::from(s[6]) << 16 | u32::from(s[7]));
    match s {
        // NAT64's well-known prefix reaches the IPv4 address it embeds.
        [0x64, 0xff9b, 0, 0, 0, 0, _, _] => class_of_v4(embedded_v4()),
        [0x64, 0xff9b, 1, ..] => AddressClass::Private,
        // `::` and the deprecated IPv4-compatible `::a.b.c.d`.
        [0, 0, 0, 0, 0, 0, _, _] => AddressClass::Unroutable,
        [first, ..] if first & 0xffc0 == 0xfe80 => AddressClass::LinkLocal,
        [first, ..] if first & 0xfe00 == 0xfc00 || first & 0xffc0 == 0xfec0 => {
            AddressClass::Private
        }
        [first, ..] if first & 0xff00 == 0xff00 => AddressClass::Unroutable,
        _ => AddressClass::Public,
    }
}

/// What a URL is for, in messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum UrlRole {
    /// Protected resource metadata (RFC 9728), named by a challenge or well-known.
    ResourceMetadata,
    /// An authorization server (issuer) named by resource metadata.
    AuthorizationServer,
    /// An authorization server's metadata document (RFC 8414, OpenID discovery).
    AuthorizationServerMetadata,
    /// Where the user is sent to approve.
    AuthorizationEndpoint,
    /// Where codes and refresh tokens are exchanged for tokens.
    TokenEndpoint,
    /// Where a client registers dynamically.
    RegistrationEndpoint,
    /// The identity provider's token endpoint (cross-app access).
    IdentityProviderTokenEndpoint,
    /// Where a device asks for a user code (RFC 8628 §3.1).
    DeviceAuthorizationEndpoint,
}

impl fmt::Display for UrlRole {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            UrlRole::ResourceMetadata => "resource metadata URL",
            UrlRole::AuthorizationServer => "authorization server",
            UrlRole::AuthorizationServerMetadata => "authorization server metadata URL",
            UrlRole::AuthorizationEndpoint => "authorization endpoint",
            UrlRole::TokenEndpoint => "token endpoint",
            UrlRole::RegistrationEndpoint => "registration endpoint",
            UrlRole::IdentityProviderTokenEndpoint => "identity provider's token endpoint",
            UrlRole::DeviceAuthorizationEndpoint => "device authorization endpoint",
        })
    }
}

/// Why a URL was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum UrlRefusal {
    /// It does not parse, or has no host.
    NotAUrl {
        /// The parser's complaint.
        problem: String,
    },
    /// A scheme other than https (or http on loopback).
    Scheme {
        /// The scheme, e.g. `javascript`.
        scheme: String,
    },
    /// Plain http off loopback, or for a server that is not itself on loopback.
    PlainHttp,
    /// Its host is an address of a class this server may not send us to.
    Address {
        /// The address's class.
        class: AddressClass,
    },
    /// Its host name resolved only to addresses this server may not send us to.
    Resolved {
        /// One of them.
        address: IpAddr,
        /// Its class.
        class: AddressClass,
    },
}

impl UrlRefusal {
    /// The class of address that was refused, if that was the reason.
    pub fn address_class(&self) -> Option<AddressClass> {
        match self {
            UrlRefusal::Address { class } | UrlRefusal::Resolved { class, .. } => Some(*class),
            _ => None,
        }
    }
}

fn describe(class: AddressClass) -> &'static str {
    match class {
        AddressClass::LinkLocal => {
            "a link-local address (cloud metadata services answer there), never contacted"
        }
        AddressClass::Unroutable => {
            "not a unicast address (unspecified, multicast, broadcast or reserved), never contacted"
        }
        AddressClass::Private => {
            "a private-network address, and the MCP server is not on a private network"
        }
        AddressClass::Loopback => "a loopback address, and the MCP server is not on loopback",
        AddressClass::Public => "a public address",
    }
}

impl fmt::Display for UrlRefusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            UrlRefusal::NotAUrl { problem } => write!(f, "it is not a URL ({problem})"),
            UrlRefusal::Scheme { scheme } => write!(
                f,
                "only https URLs are followed, not `{}:`",
                scheme.escape_debug()
            ),
            UrlRefusal::PlainHttp => f.write_str(
                "plain http is allowed only on loopback, for an MCP server that is itself on loopback",
            ),
            UrlRefusal::Address { class } => write!(f, "its host is {}", describe(*class)),
            UrlRefusal::Resolved { address, class } => {
                write!(f, "its host resolves to {address}, {}", describe(*class))
            }
        }
    }
}

/// How a URL's host is judged.
#[derive(Debug, Clone, PartialEq, Eq)]
enum HostKind {
    /// An address literal (in any form the URL parser accepts).
    Address(IpAddr),
    /// `localhost` or a name under it (RFC 6761), with or without a trailing dot.
    LoopbackName,
    /// Any other name: judged by what it resolves to.
    Name,
}

fn host_kind(host: &Host<&str>) -> HostKind {
    match host {
        Host::Ipv4(v4) => HostKind::Address(IpAddr::V4(*v4)),
        Host::Ipv6(v6) => HostKind::Address(IpAddr::V6(*v6)),
        Host::Domain(name) => {
            if is_loopback_name(name) {
                HostKind::LoopbackName
            } else {
                HostKind::Name
            }
        }
    }
}

fn is_loopback_name(name: &str) -> bool {
    let name = name.trim_end_matches('.').to_ascii_lowercase();
    name == "localhost" || name.ends_with(".localhost")
}

/// The rules for one MCP server: which address classes its authorization may reach.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct UrlPolicy {
    /// The classes of the MCP server's own addresses.
    server_classes: BTreeSet<AddressClass>,
}

impl UrlPolicy {
    /// The policy for a server reached at `server`: its host's classes, from the address
    /// itself or (for a name) from what the name resolves to now. A name that does not
    /// resolve counts as public.
    pub(crate) async fn for_server(server: &Url) -> UrlPolicy {
        let mut server_classes = BTreeSet::new();
        match server.host().as_ref().map(host_kind) {
            Some(HostKind::Address(address)) => {
                server_classes.insert(AddressClass::of(address));
            }
            Some(HostKind::LoopbackName) => {
                server_classes.insert(AddressClass::Loopback);
            }
            Some(HostKind::Name) => {
                let host = server.host_str().unwrap_or_default();
                let port = server.port_or_known_default().unwrap_or(443);
                if let Ok(Ok(addresses)) = tokio::time::timeout(
                    SERVER_LOOKUP_DEADLINE,
                    tokio::net::lookup_host((host, port)),
                )
                .await
                {
                    server_classes.extend(addresses.map(|a| AddressClass::of(a.ip())));
                }
            }
            None => {}
        }
        if server_classes.is_empty() {
            server_classes.insert(AddressClass::Public);
        }
        UrlPolicy { server_classes }
    }

    /// A policy for a server whose host is of these classes (tests).
    #[cfg(test)]
    pub(crate) fn for_classes(classes: &[AddressClass]) -> UrlPolicy {
        UrlPolicy {
            server_classes: classes.iter().copied().collect(),
        }
    }

    fn server_on_loopback(&self) -> bool {
        self.server_classes.contains(&AddressClass::Loopback)
    }

    /// Whether an address of this class may be reached for this server.
    fn allows(&self, class: AddressClass) -> bool {
        match class {
            AddressClass::Public => true,
            AddressClass::Private | AddressClass::Loopback => self.server_classes.contains(&class),
            AddressClass::LinkLocal | AddressClass::Unroutable => false,
        }
    }

    /// The URL, parsed, when this server's authorization may use it; else why not. Host
    /// names pass here and are judged by [`PinnedResolver`] when they are resolved.
    pub(crate) fn check(&self, url: &str) -> Result<Url, UrlRefusal> {
        let parsed = Url::parse(url).map_err(|e| UrlRefusal::NotAUrl {
            problem: e.to_string(),
        })?;
        let host = match parsed.scheme() {
            "https" | "http" => parsed.host().map(|h| host_kind(&h)),
            other => {
                return Err(UrlRefusal::Scheme {
                    scheme: other.to_owned(),
                });
            }
        };
        let Some(host) = host else {
            return Err(UrlRefusal::NotAUrl {
                problem: "it has no host".into(),
            });
        };
        let class = match host {
            HostKind::Address(address) => Some(AddressClass::of(address)),
            HostKind::LoopbackName => Some(AddressClass::Loopback),
            HostKind::Name => None,
        };
        if let Some(class) = class.filter(|class| !self.allows(*class)) {
            return Err(UrlRefusal::Address { class });
        }
        if parsed.scheme() == "http"
            && !(class == Some(AddressClass::Loopback) && self.server_on_loopback())
        {
            return Err(UrlRefusal::PlainHttp);
        }
        Ok(parsed)
    }

    /// The addresses of `name` this server's authorization may connect to, or why none.
    /// A `localhost` name must resolve to loopback only (it may carry plain http).
    fn admit(&self, name: &str, resolved: Vec<SocketAddr>) -> Result<Vec<SocketAddr>, UrlRefusal> {
        let loopback_name = is_loopback_name(name);
        let mut refused = None;
        let admitted: Vec<SocketAddr> = resolved
            .into_iter()
            .filter(|address| {
                let class = AddressClass::of(address.ip());
                let admitted = if loopback_name {
                    class == AddressClass::Loopback && self.allows(class)
                } else {
                    self.allows(class)
                };
                if !admitted && refused.is_none() {
                    refused = Some(UrlRefusal::Resolved {
                        address: address.ip(),
                        class,
                    });
                }
                admitted
            })
            .collect();
        match (admitted.is_empty(), refused) {
            (true, Some(refusal)) => Err(refusal),
            _ => Ok(admitted),
        }
    }
}

/// The error a [`PinnedResolver`] gives for a name that resolves only to refused addresses;
/// found again in the HTTP client's error chain by [`refusal_in`].
#[derive(Debug)]
pub(crate) struct RefusedResolution(pub(crate) UrlRefusal);

impl fmt::Display for RefusedResolution {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for RefusedResolution {}

/// The refusal inside an HTTP client error, if a [`PinnedResolver`] refused the name.
pub(crate) fn refusal_in(error: &(dyn std::error::Error + 'static)) -> Option<UrlRefusal> {
    let mut current = Some(error);
    while let Some(error) = current {
        if let Some(refused) = error.downcast_ref::<RefusedResolution>() {
            return Some(refused.0.clone());
        }
        current = error.source();
    }
    None
}

/// The HTTP client's resolver: resolves names with the system resolver and hands the
/// client only the addresses [`UrlPolicy`] allows, so what was judged is what is
/// connected to. The names of configured proxies (`HTTPS_PROXY`, …), which the user chose,
/// are resolved without judgement; a proxied request's host is then resolved by the
/// proxy, beyond this check.
#[derive(Debug)]
pub(crate) struct PinnedResolver {
    policy: Arc<UrlPolicy>,
    proxies: BTreeSet<String>,
}

impl PinnedResolver {
    pub(crate) fn new(policy: Arc<UrlPolicy>) -> PinnedResolver {
        let proxies = [
            "HTTPS_PROXY",
            "https_proxy",
            "HTTP_PROXY",
            "http_proxy",
            "ALL_PROXY",
            "all_proxy",
        ]
        .iter()
        .filter_map(|name| std::env::var(name).ok())
        .filter_map(|value| {
            let value = if value.contains("://") {
                value
            } else {
                format!("http://{value}")
            };
            Url::parse(&value)
                .ok()?
                .host_str()
                .map(str::to_ascii_lowercase)
        })
        .collect();
        PinnedResolver { policy, proxies }
    }
}

impl reqwest::dns::Resolve for PinnedResolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let policy = self.policy.clone();
        let name = name.as_str().to_owned();
        let proxy = self.proxies.contains(&name.to_ascii_lowercase());
        Box::pin(async move {
            let resolved: Vec<SocketAddr> =
                tokio::net::lookup_host((name.as_str(), 0)).await?.collect();
            let admitted = if proxy {
                resolved
            } else {
                policy.admit(&name, resolved).map_err(RefusedResolution)?
            };
            let addresses: reqwest::dns::Addrs = Box::new(admitted.into_iter());
            Ok(addresses)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn judged(policy: &UrlPolicy, url: &str) -> String {
        match policy.check(url) {
            Ok(_) => "allowed".to_owned(),
            Err(refusal) => refusal.to_string(),
        }
    }

    /// Every URL against a server on loopback, on a private network and on the internet.
    #[test]
    fn urls_are_judged_by_the_class_of_their_host_and_the_servers() {
        let urls = [
            "https://as.example.com/authorize",
            "http://as.example.com/authorize",
            "http://127.0.0.1:8080/token",
            "https://127.0.0.1:8080/token",
            "http://[::1]:8080/token",
            "http://localhost:8080/token",
            "http://LOCALHOST./token",
            "http://app.localhost/token",
            "https://2130706433/",
            "https://0177.0.0.1/",
            "https://0x7f.1/",
            "https://127.1/",
            "https://127.0.0.1./",
            "https://[::ffff:127.0.0.1]/",
            "https://10.0.0.1/",
            "https://172.16.5.4/",
            "https://192.168.1.1/",
            "https://100.64.0.1/",
            "https://[::ffff:10.0.0.1]/",
            "https://[::ffff:a00:1]/",
            "https://[fd00::1]/",
            "https://[64:ff9b::a00:1]/",
            "https://169.254.169.254/latest/meta-data/",
            "http://169.254.169.254/latest/meta-data/",
            "https://[::ffff:169.254.169.254]/",
            "https://[fe80::1]/",
            "https://0.0.0.0/",
            "https://0/",
            "https://[::]/",
            "https://[::7f00:1]/",
            "https://255.255.255.255/",
            "https://224.0.0.1/",
            "https://[ff02::1]/",
            "https://8.8.8.8/",
            "https://[2001:4860::8888]/",
            "javascript:alert(1)",
            "file:///etc/passwd",
            "data:text/plain,hi",
            "ftp://as.example.com/",
            "not a url",
            "https://",
        ];
        let servers = [
            (
                "loopback",
                UrlPolicy::for_classes(&[AddressClass::Loopback]),
            ),
            ("private", UrlPolicy::for_classes(&[AddressClass::Private])),
            ("public", UrlPolicy::for_classes(&[AddressClass::Public])),
        ];
        let mut table = String::new();
        for url in urls {
            table.push_str(url);
            table.push('\n');
            for (name, policy) in &servers {
                table.push_str(&format!("  {name:8} {}\n", judged(policy, url)));
            }
        }
        expect_test::expect![[r#"
            https://as.example.com/authorize
              loopback allowed
              private  allowed
              public   allowed
            http://as.example.com/authorize
              loopback plain http is allowed only on loopback, for an MCP server that is itself on loopback
              private  plain http is allowed only on loopback, for an MCP server that is itself on loopback
              public   plain http is allowed only on loopback, for an MCP server that is itself on loopback
            http://127.0.0.1:8080/token
              loopback allowed
              private  its host is a loopback address, and the MCP server is not on loopback
              public   its host is a loopback address, and the MCP server is not on loopback
            https://127.0.0.1:8080/token
              loopback allowed
              private  its host is a loopback address, and the MCP server is not on loopback
              public   its host is a loopback address, and the MCP server is not on loopback
            http://[::1]:8080/token
              loopback allowed
              private  its host is a loopback address, and the MCP server is not on loopback
              public   its host is a loopback address, and the MCP server is not on loopback
            http://localhost:8080/token
              loopback allowed
              private  its host is a loopback address, and the MCP server is not on loopback
              public   its host is a loopback address, and the MCP server is not on loopback
            http://LOCALHOST./token
              loopback allowed
              private  its host is a loopback address, and the MCP server is not on loopback
              public   its host is a loopback address, and the MCP server is not on loopback
            http://app.localhost/token
              loopback allowed
              private  its host is a loopback address, and the MCP server is not on loopback
              public   its host is a loopback address, and the MCP server is not on loopback
            https://2130706433/
              loopback allowed
              private  its host is a loopback address, and the MCP server is not on loopback
              public   its host is a loopback address, and the MCP server is not on loopback
            https://0177.0.0.1/
              loopback allowed
              private  its host is a loopback address, and the MCP server is not on loopback
              public   its host is a loopback address, and the MCP server is not on loopback
            https://0x7f.1/
              loopback allowed
              private  its host is a loopback address, and the MCP server is not on loopback
              public   its host is a loopback address, and the MCP server is not on loopback
            https://127.1/
              loopback allowed
              private  its host is a loopback address, and the MCP server is not on loopback
              public   its host is a loopback address, and the MCP server is not on loopback
            https://127.0.0.1./
              loopback allowed
              private  its host is a loopback address, and the MCP server is not on loopback
              public   its host is a loopback address, and the MCP server is not on loopback
            https://[::ffff:127.0.0.1]/
              loopback allowed
              private  its host is a loopback address, and the MCP server is not on loopback
              public   its host is a loopback address, and the MCP server is not on loopback
            https://10.0.0.1/
              loopback its host is a private-network address, and the MCP server is not on a private network
              private  allowed
              public   its host is a private-network address, and the MCP server is not on a private network
            https://172.16.5.4/
              loopback its host is a private-network address, and the MCP server is not on a private network
              private  allowed
              public   its host is a private-network address, and the MCP server is not on a private network
            https://192.168.1.1/
              loopback its host is a private-network address, and the MCP server is not on a private network
              private  allowed
              public   its host is a private-network address, and the MCP server is not on a private network
            https://100.64.0.1/
              loopback its host is a private-network address, and the MCP server is not on a private network
              private  allowed
              public   its host is a private-network address, and the MCP server is not on a private network
            https://[::ffff:10.0.0.1]/
              loopback its host is a private-network address, and the MCP server is not on a private network
              private  allowed
              public   its host is a private-network address, and the MCP server is not on a private network
            https://[::ffff:a00:1]/
              loopback its host is a private-network address, and the MCP server is not on a private network
              private  allowed
              public   its host is a private-network address, and the MCP server is not on a private network
            https://[fd00::1]/
              loopback its host is a private-network address, and the MCP server is not on a private network
              private  allowed
              public   its host is a private-network address, and the MCP server is not on a private network
            https://[64:ff9b::a00:1]/
              loopback its host is a private-network address, and the MCP server is not on a private network
              private  allowed
              public   its host is a private-network address, and the MCP server is not on a private network
            https://169.254.169.254/latest/meta-data/
              loopback its host is a link-local address (cloud metadata services answer there), never contacted
              private  its host is a link-local address (cloud metadata services answer there), never contacted
              public   its host is a link-local address (cloud metadata services answer there), never contacted
            http://169.254.169.254/latest/meta-data/
              loopback its host is a link-local address (cloud metadata services answer there), never contacted
              private  its host is a link-local address (cloud metadata services answer there), never contacted
              public   its host is a link-local address (cloud metadata services answer there), never contacted
            https://[::ffff:169.254.169.254]/
              loopback its host is a link-local address (cloud metadata services answer there), never contacted
              private  its host is a link-local address (cloud metadata services answer there), never contacted
              public   its host is a link-local address (cloud metadata services answer there), never contacted
            https://[fe80::1]/
              loopback its host is a link-local address (cloud metadata services answer there), never contacted
              private  its host is a link-local address (cloud metadata services answer there), never contacted
              public   its host is a link-local address (cloud metadata services answer there), never contacted
            https://0.0.0.0/
              loopback its host is not a unicast address (unspecified, multicast, broadcast or reserved), never contacted
              private  its host is not a unicast address (unspecified, multicast, broadcast or reserved), never contacted
              public   its host is not a unicast address (unspecified, multicast, broadcast or reserved), never contacted
            https://0/
              loopback its host is not a unicast address (unspecified, multicast, broadcast or reserved), never contacted
              private  its host is not a unicast address (unspecified, multicast, broadcast or reserved), never contacted
              public   its host is not a unicast address (unspecified, multicast, broadcast or reserved), never contacted
            https://[::]/
              loopback its host is not a unicast address (unspecified, multicast, broadcast or reserved), never contacted
              private  its host is not a unicast address (unspecified, multicast, broadcast or reserved), never contacted
              public   its host is not a unicast address (unspecified, multicast, broadcast or reserved), never contacted
            https://[::7f00:1]/
              loopback its host is not a unicast address (unspecified, multicast, broadcast or reserved), never contacted
              private  its host is not a unicast address (unspecified, multicast, broadcast or reserved), never contacted
              public   its host is not a unicast address (unspecified, multicast, broadcast or reserved), never contacted
            https://255.255.255.255/
              loopback its host is not a unicast address (unspecified, multicast, broadcast or reserved), never contacted
              private  its host is not a unicast address (unspecified, multicast, broadcast or reserved), never contacted
              public   its host is not a unicast address (unspecified, multicast, broadcast or reserved), never contacted
            https://224.0.0.1/
              loopback its host is not a unicast address (unspecified, multicast, broadcast or reserved), never contacted
              private  its host is not a unicast address (unspecified, multicast, broadcast or reserved), never contacted
              public   its host is not a unicast address (unspecified, multicast, broadcast or reserved), never contacted
            https://[ff02::1]/
              loopback its host is not a unicast address (unspecified, multicast, broadcast or reserved), never contacted
              private  its host is not a unicast address (unspecified, multicast, broadcast or reserved), never contacted
              public   its host is not a unicast address (unspecified, multicast, broadcast or reserved), never contacted
            https://8.8.8.8/
              loopback allowed
              private  allowed
              public   allowed
            https://[2001:4860::8888]/
              loopback allowed
              private  allowed
              public   allowed
            javascript:alert(1)
              loopback only https URLs are followed, not `javascript:`
              private  only https URLs are followed, not `javascript:`
              public   only https URLs are followed, not `javascript:`
            file:///etc/passwd
              loopback only https URLs are followed, not `file:`
              private  only https URLs are followed, not `file:`
              public   only https URLs are followed, not `file:`
            data:text/plain,hi
              loopback only https URLs are followed, not `data:`
              private  only https URLs are followed, not `data:`
              public   only https URLs are followed, not `data:`
            ftp://as.example.com/
              loopback only https URLs are followed, not `ftp:`
              private  only https URLs are followed, not `ftp:`
              public   only https URLs are followed, not `ftp:`
            not a url
              loopback it is not a URL (relative URL without a base)
              private  it is not a URL (relative URL without a base)
              public   it is not a URL (relative URL without a base)
            https://
              loopback it is not a URL (empty host)
              private  it is not a URL (empty host)
              public   it is not a URL (empty host)
        "#]].assert_eq(&table);
    }

    #[test]
    fn resolved_names_are_pinned_to_allowed_addresses() {
        let public = UrlPolicy::for_classes(&[AddressClass::Public]);
        let loopback = UrlPolicy::for_classes(&[AddressClass::Loopback]);
        let at = |ip: &str| SocketAddr::new(ip.parse().expect("ip"), 443);
        assert_eq!(
            public.admit("as.test", vec![at("10.0.0.1"), at("93.184.215.14")]),
            Ok(vec![at("93.184.215.14")])
        );
        assert_eq!(
            public.admit("as.test", vec![at("169.254.169.254")]),
            Err(UrlRefusal::Resolved {
                address: "169.254.169.254".parse().expect("ip"),
                class: AddressClass::LinkLocal
            })
        );
        assert_eq!(
            loopback.admit("as.test", vec![at("127.0.0.1")]),
            Ok(vec![at("127.0.0.1")])
        );
        // A `localhost` name may carry plain http: it must stay on loopback.
        assert!(
            loopback
                .admit("localhost", vec![at("93.184.215.14")])
                .is_err()
        );
        assert!(public.admit("localhost", vec![at("127.0.0.1")]).is_err());
    }

    /// The resolver itself, on a name every system resolves.
    #[tokio::test]
    async fn the_resolver_refuses_localhost_for_a_public_server() {
        use reqwest::dns::Resolve;
        use std::str::FromStr;
        let name = || reqwest::dns::Name::from_str("localhost").expect("name");
        let public = PinnedResolver::new(Arc::new(UrlPolicy::for_classes(&[AddressClass::Public])));
        let refused = match public.resolve(name()).await {
            Ok(_) => panic!("localhost was admitted for a public server"),
            Err(error) => error,
        };
        assert!(
            matches!(
                refusal_in(&*refused),
                Some(UrlRefusal::Resolved {
                    class: AddressClass::Loopback,
                    ..
                })
            ),
            "{refused}"
        );
        let loopback =
            PinnedResolver::new(Arc::new(UrlPolicy::for_classes(&[AddressClass::Loopback])));
        let admitted: Vec<SocketAddr> = match loopback.resolve(name()).await {
            Ok(addresses) => addresses.collect(),
            Err(error) => panic!("localhost was refused for a loopback server: {error}"),
        };
        assert!(admitted.iter().all(|a| a.ip().is_loopback()) && !admitted.is_empty());
    }

    #[tokio::test]
    async fn a_servers_class_comes_from_its_host() {
        let policy = |url: &str| {
            let url = Url::parse(url).expect("url");
            async move { UrlPolicy::for_server(&url).await }
        };
        assert_eq!(
            policy("http://127.0.0.1:9/mcp").await,
            UrlPolicy::for_classes(&[AddressClass::Loopback])
        );
        assert_eq!(
            policy("http://localhost:9/mcp").await,
            UrlPolicy::for_classes(&[AddressClass::Loopback])
        );
        assert_eq!(
            policy("https://[::ffff:192.168.0.2]/mcp").await,
            UrlPolicy::for_classes(&[AddressClass::Private])
        );
        assert_eq!(
            policy("https://203.0.113.9/mcp").await,
            UrlPolicy::for_classes(&[AddressClass::Public])
        );
    }
}
