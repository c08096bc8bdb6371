// The loopback interface as programs ask for it: getifaddrs and if_nameindex (glibc asks
// rtnetlink), if_nametoindex, the SIOCGIF* ioctls, and a raw NETLINK_ROUTE link dump.
// Only `lo` is printed: qemu-aarch64 shows the host's interfaces, armada its run's one
// loopback device, and `lo` is the same on both (index 1, 127.0.0.1/8, ::1, MTU 65536).
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

static void show_addr(const char *what, struct sockaddr *sa) {
    char buf[64] = "-";
    if (sa && sa->sa_family == AF_INET)
        inet_ntop(AF_INET, &((struct sockaddr_in *)sa)->sin_addr, buf, sizeof buf);
    else if (sa && sa->sa_family == AF_INET6)
        inet_ntop(AF_INET6, &((struct sockaddr_in6 *)sa)->sin6_addr, buf, sizeof buf);
    printf(" %s %s", what, buf);
}

int main(void) {
    struct ifaddrs *ifs;
    if (getifaddrs(&ifs)) {
        perror("getifaddrs");
        return 1;
    }
    for (struct ifaddrs *i = ifs; i; i = i->ifa_next) {
        if (strcmp(i->ifa_name, "lo"))
            continue;
        int fam = i->ifa_addr ? i->ifa_addr->sa_family : -1;
        printf("getifaddrs lo family %s flags up=%d loopback=%d running=%d",
               fam == AF_INET ? "inet" : fam == AF_INET6 ? "inet6" : "packet",
               !!(i->ifa_flags & IFF_UP), !!(i->ifa_flags & IFF_LOOPBACK),
               !!(i->ifa_flags & IFF_RUNNING));
        if (fam == AF_INET || fam == AF_INET6) {
            show_addr("addr", i->ifa_addr);
            show_addr("mask", i->ifa_netmask);
        }
        printf("\n");
    }
    freeifaddrs(ifs);

    struct if_nameindex *ni = if_nameindex();
    for (struct if_nameindex *p = ni; p && p->if_index; p++)
        if (!strcmp(p->if_name, "lo"))
            printf("if_nameindex lo %u\n", p->if_index);
    if_freenameindex(ni);
    printf("if_nametoindex lo %u, nosuch %u (%s)\n", if_nametoindex("lo"),
           if_nametoindex("nosuch0"), errno == ENODEV ? "ENODEV" : strerror(errno));
    char name[IF_NAMESIZE] = "";
    printf("if_indextoname 1 %s\n", if_indextoname(1, name) ? name : "?");

    int s = socket(AF_INET, SOCK_DGRAM, 0);
    struct ifreq r;
    memset(&r, 0, sizeof r);
    strcpy(r.ifr_name, "lo");
    ioctl(s, SIOCGIFFLAGS, &r);
    printf("SIOCGIFFLAGS %#x\n", r.ifr_flags & (IFF_UP | IFF_LOOPBACK | IFF_RUNNING));
    ioctl(s, SIOCGIFMTU, &r);
    printf("SIOCGIFMTU %d\n", r.ifr_mtu);
    ioctl(s, SIOCGIFINDEX, &r);
    printf("SIOCGIFINDEX %d\n", r.ifr_ifindex);
    ioctl(s, SIOCGIFADDR, &r);
    show_addr("SIOCGIFADDR", &r.ifr_addr);
    ioctl(s, SIOCGIFNETMASK, &r);
    show_addr("SIOCGIFNETMASK", &r.ifr_netmask);
    printf("\n");
    strcpy(r.ifr_name, "nosuch0");
    errno = 0;
    printf("SIOCGIFMTU nosuch0 %d %s\n", ioctl(s, SIOCGIFMTU, &r),
           errno == ENODEV ? "ENODEV" : strerror(errno));
    close(s);

    // a link dump by hand: lo's message, with the sequence number and our port id
    int nl = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
    struct sockaddr_nl sa = {.nl_family = AF_NETLINK};
    socklen_t sl = sizeof sa;
    bind(nl, (void *)&sa, sizeof sa);
    getsockname(nl, (void *)&sa, &sl);
    printf("netlink port id is the pid: %d\n", sa.nl_pid == (unsigned)getpid());
    struct {
        struct nlmsghdr h;
        struct rtgenmsg g;
    } req = {{sizeof req, RTM_GETLINK, NLM_F_REQUEST | NLM_F_DUMP, 42, 0}, {AF_UNSPEC}};
    send(nl, &req, sizeof req, 0);
    char buf[16384];
    int done = 0, seq_ok = 1, pid_ok = 1;
    while (!done) {
        int n = recv(nl, buf, sizeof buf, 0);
        if (n <= 0)
            break;
        for (struct nlmsghdr *h = (void *)buf; NLMSG_OK(h, n); h = NLMSG_NEXT(h, n)) {
            seq_ok &= h->nlmsg_seq == 42;
            pid_ok &= h->nlmsg_pid == sa.nl_pid;
            if (h->nlmsg_type == NLMSG_DONE) {
                done = 1;
                break;
            }
            if (h->nlmsg_type != RTM_NEWLINK)
                continue;
            struct ifinfomsg *ifi = NLMSG_DATA(h);
            int len = IFLA_PAYLOAD(h);
            const char *nm = "?";
            unsigned mtu = 0;
            for (struct rtattr *a = IFLA_RTA(ifi); RTA_OK(a, len); a = RTA_NEXT(a, len)) {
                if (a->rta_type == IFLA_IFNAME)
                    nm = RTA_DATA(a);
                if (a->rta_type == IFLA_MTU)
                    mtu = *(unsigned *)RTA_DATA(a);
            }
            if (!strcmp(nm, "lo"))
                printf("RTM_NEWLINK lo index %d type %u mtu %u\n", ifi->ifi_index, ifi->ifi_type,
                       mtu);
        }
    }
    printf("dump done %d, seq ok %d, port id ok %d\n", done, seq_ok, pid_ok);
    return 0;
}
