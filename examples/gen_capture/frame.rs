//! The frame writer: a flow's packet (Ethernet, IPv4 or IPv6, TCP or UDP, with correct lengths
//! and checksums) or an ARP frame, built in the generator's buffer.

use crate::flow::{Flow, Generator};
use crate::model::{TCP, UDP};
use chronobloom::core::hash::mix64;

impl Generator<'_> {
    /// A host's private IPv4 address: a bijection of ranks onto 24 bits, the first 2^16 of
    /// which land in 192.168.0.0/16 and the rest in 10.0.0.0/8.
    fn ipv4(&self, host: u32) -> [u8; 4] {
        let mut x = u64::from(host);
        x = (x.wrapping_mul(0x9e_3779) ^ self.key) & 0xff_ffff;
        x ^= x >> 12;
        x = x.wrapping_mul(0x5b_d1e9) & 0xff_ffff;
        x ^= x >> 11;
        let b = (x as u32).to_be_bytes();
        if x < 0x1_0000 {
            [192, 168, b[2], b[3]]
        } else {
            [10, b[1], b[2], b[3]]
        }
    }

    /// A host's ULA IPv6 address in fd00::/8: one /48, 256 subnets, a hashed interface id.
    fn ipv6(&self, host: u32) -> [u8; 16] {
        let mut a = [0u8; 16];
        a[..6].copy_from_slice(&[0xfd, 0x3c, 0x7a, 0x51, 0x0e, 0x29]);
        a[7] = host as u8;
        a[8..].copy_from_slice(&mix64(u64::from(host) ^ self.key).to_be_bytes());
        a
    }

    fn mac(host: u32) -> [u8; 6] {
        let h = host.to_be_bytes();
        [0x02, 0x42, h[0], h[1], h[2], h[3]]
    }

    /// The frame of a flow's next packet, in `self.frame`.
    pub(crate) fn packet(&mut self, flow: &mut Flow) {
        // The first packet goes client to server, later ones either way.
        let forward = flow.sent == 0 || self.uniform() < 0.55;
        let (src, dst, sp, dp) = if forward {
            (flow.client, flow.server, flow.cport, flow.sport)
        } else {
            (flow.server, flow.client, flow.sport, flow.cport)
        };
        let l4_len: u16 = if flow.proto == TCP { 20 } else { 8 };
        let (s4, d4) = (self.ipv4(src), self.ipv4(dst));
        let (s6, d6) = if flow.v6 {
            (self.ipv6(src), self.ipv6(dst))
        } else {
            ([0; 16], [0; 16])
        };
        self.ip_id = self.ip_id.wrapping_add(1);
        let f = &mut self.frame;
        f.clear();
        f.extend_from_slice(&Self::mac(dst));
        f.extend_from_slice(&Self::mac(src));
        // The pseudo-header's addresses, summed for the transport checksum.
        let addresses = if flow.v6 {
            f.extend_from_slice(&0x86ddu16.to_be_bytes());
            f.extend_from_slice(&[0x60, 0, 0, 0]);
            f.extend_from_slice(&l4_len.to_be_bytes());
            f.extend_from_slice(&[flow.proto, 64]);
            f.extend_from_slice(&s6);
            f.extend_from_slice(&d6);
            sum16(&s6) + sum16(&d6)
        } else {
            f.extend_from_slice(&0x0800u16.to_be_bytes());
            let ip_start = f.len();
            let total = 20 + l4_len;
            f.extend_from_slice(&[0x45, 0]);
            f.extend_from_slice(&total.to_be_bytes());
            f.extend_from_slice(&self.ip_id.to_be_bytes());
            f.extend_from_slice(&[0x40, 0, 64, flow.proto, 0, 0]);
            f.extend_from_slice(&s4);
            f.extend_from_slice(&d4);
            let c = fold(sum16(&f[ip_start..ip_start + 20]));
            f[ip_start + 10..ip_start + 12].copy_from_slice(&c.to_be_bytes());
            sum16(&s4) + sum16(&d4)
        };
        let pseudo = addresses + u32::from(l4_len) + u32::from(flow.proto);
        let l4 = f.len();
        f.extend_from_slice(&sp.to_be_bytes());
        f.extend_from_slice(&dp.to_be_bytes());
        if flow.proto == TCP {
            let flags: u8 = if flow.sent == 0 {
                0x02 // SYN
            } else if flow.left == 1 {
                0x11 // FIN, ACK
            } else if flow.sent % 4 == 1 {
                0x18 // PSH, ACK
            } else {
                0x10 // ACK
            };
            let seq = flow.isn.wrapping_add(flow.sent);
            let ack = if flow.sent == 0 { 0 } else { !seq };
            f.extend_from_slice(&seq.to_be_bytes());
            f.extend_from_slice(&ack.to_be_bytes());
            f.extend_from_slice(&[0x50, flags, 0xff, 0xff, 0, 0, 0, 0]);
        } else {
            f.extend_from_slice(&l4_len.to_be_bytes());
            f.extend_from_slice(&[0, 0]);
        }
        let mut c = fold(pseudo + sum16(&f[l4..]));
        if flow.proto == UDP && c == 0 {
            c = 0xffff;
        }
        let at = l4 + if flow.proto == TCP { 16 } else { 6 };
        f[at..at + 2].copy_from_slice(&c.to_be_bytes());
    }

    /// An ARP request (broadcast) or reply (unicast) between two hosts, in `self.frame`.
    pub(crate) fn arp(&mut self) {
        let (asker, target) = (self.zipf(), self.hosts - 1 - self.zipf());
        let reply = self.uniform() < 0.3;
        let (sender, receiver) = if reply {
            (target, asker)
        } else {
            (asker, target)
        };
        let (sha, spa, tpa) = (Self::mac(sender), self.ipv4(sender), self.ipv4(receiver));
        let f = &mut self.frame;
        f.clear();
        if reply {
            f.extend_from_slice(&Self::mac(receiver));
        } else {
            f.extend_from_slice(&[0xff; 6]);
        }
        f.extend_from_slice(&sha);
        f.extend_from_slice(&0x0806u16.to_be_bytes());
        f.extend_from_slice(&[0, 1, 8, 0, 6, 4, 0, if reply { 2 } else { 1 }]);
        f.extend_from_slice(&sha);
        f.extend_from_slice(&spa);
        if reply {
            f.extend_from_slice(&Self::mac(receiver));
        } else {
            f.extend_from_slice(&[0; 6]);
        }
        f.extend_from_slice(&tpa);
    }
}

/// The one's-complement sum of big-endian 16-bit words (an odd last byte is padded with zero),
/// not yet folded.
fn sum16(bytes: &[u8]) -> u32 {
    bytes
        .chunks(2)
        .map(|w| u32::from(u16::from_be_bytes([w[0], w.get(1).copied().unwrap_or(0)])))
        .sum()
}

/// The Internet checksum of a [`sum16`] total.
fn fold(mut sum: u32) -> u16 {
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}
