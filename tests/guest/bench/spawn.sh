# The spawn benchmark (armada bench): busybox sh runs `busybox true` COUNT times, each a
# new process (fork + execve), as a shell script does.
#   busybox sh tests/guest/bench/spawn.sh BUSYBOX [COUNT]   (default COUNT 1000)
i=0
n=${2:-1000}
while [ "$i" -lt "$n" ]; do
    "$1" true
    i=$((i + 1))
done
echo "$n processes"
