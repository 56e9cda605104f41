#!/usr/bin/env python3
"""Every page of a user's 10,000 of 20,000 projects through `GET /v1/resources` of a release `policy serve` (SQLite),
next to a plain SELECT of the same ids on the same file (issue 41's lists row: HTTP <= 3x at limit 1000).

    scripts/list-http-load.py [--bin PATH] [--rounds 7] [--cpu N]
    scripts/list-http-load.py --callgrind DIR       the server under callgrind: instructions per whole listing
                                                    (every page) at limit 1000 and 100, dumps kept in DIR

The server gets a fresh SQLite file; two PIN accounts register through it (`me` and `other`), then 20,000 projects
owned by `other` are written straight into the file with Python's sqlite3 (the v22 triggers fill the membership rows'
copies), `me` an editor of every other one. Then, `--rounds` times and interleaved: every page at `limit` 1000 and 100
(one keep-alive connection, the client following `nextCursor`), and the plain
`SELECT resourceId FROM membership WHERE userId = ? ORDER BY resourceId` through Python's sqlite3 (the library GRDB
links). Prints medians and the ratios within the run. The ids of every listing are checked equal to the SELECT's.
The client's own work (reading the answer, json.loads) is inside the HTTP figures, as an app's would be; `--cpu N`
pins the server to CPU N and this script to the others, so the two do not share a core. Wall clock: run it on an
otherwise idle machine and say the load average."""
import argparse, http.client, json, os, sqlite3, statistics, subprocess, sys, tempfile, time, urllib.parse, uuid

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


SIGSUSPEND = r'''
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>
int sigsuspend(const sigset_t *mask) { sigset_t copy = *mask; return (int)syscall(SYS_rt_sigsuspend, &copy, 8); }
'''


def under_callgrind(binary, work, out):
    """The command prefix and environment that run `binary` under callgrind as scripts/callgrind-per-request.sh does
    (a copy without debug info, which valgrind 3.19 cannot read, and a sigsuspend shim)."""
    copy = os.path.join(work, 'policy')
    subprocess.run(['objcopy', '--strip-debug', binary, copy], check=True)
    with open(os.path.join(work, 'sigsuspend.c'), 'w') as f:
        f.write(SIGSUSPEND)
    subprocess.run(['cc', '-shared', '-fPIC', '-O2', '-o', os.path.join(work, 'sigsuspend.so'), os.path.join(work, 'sigsuspend.c')], check=True)
    env = dict(os.environ, LD_PRELOAD=os.path.join(work, 'sigsuspend.so'), SWIFT_DETERMINISTIC_HASHING='1')
    return ['valgrind', '--tool=callgrind', '--instr-atstart=no', '--callgrind-out-file=' + out], copy, env


def start(binary, database, cpu, prefix=(), env=None):
    cmd = list(prefix) + [binary, 'serve', '--policies', os.path.join(ROOT, 'policies/research-crawler'), '--database', database,
           '--sign-in-limit', '1000000/60', '--host', '127.0.0.1', '--port', '0']
    if cpu is not None:
        cmd = ['taskset', '-c', str(cpu)] + cmd
    server = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)
    for line in server.stdout:
        if line.startswith('listening on '):
            return server, urllib.parse.urlparse(line.split(' ', 2)[2].strip())
    raise SystemExit('the server did not start')


def sign_in(conn, username):
    """A PIN account (research-crawler's projects are for signed-in users; an anonymous session counts as signed out)."""
    body = json.dumps({'username': username, 'pin': '5820'}).encode()
    conn.request('POST', '/v1/auth/pin/register', body=body, headers={'Content-Type': 'application/json'})
    response = conn.getresponse()
    answer = json.loads(response.read())
    if response.status not in (200, 201):
        raise SystemExit('PIN registration answered %d: %s' % (response.status, answer))
    return answer['userId'], answer['accessToken']


def seed(database, me, other):
    db = sqlite3.connect(database, timeout=30)
    with db:
        for i in range(20000):
            rid = 'p%06d-%s' % (i, uuid.uuid4())
            db.execute('INSERT INTO resource (id, type, name, ownerId, createdAt) VALUES (?, ?, ?, ?, ?)',
                       (rid, 'project', 'P', other, '2026-11-28 00:00:00.000'))
            db.execute('INSERT INTO membership (resourceId, userId, role, joinedAt) VALUES (?, ?, ?, ?)',
                       (rid, other, 'owner', '2026-11-28 00:00:00.000'))
            if i % 2 == 0:
                db.execute('INSERT INTO membership (resourceId, userId, role, joinedAt) VALUES (?, ?, ?, ?)',
                           (rid, me, 'editor', '2026-11-28 00:00:00.000'))
    db.close()


def list_all(conn, token, limit):
    ids, cursor = [], None
    while True:
        query = {'type': 'project', 'action': 'view', 'limit': str(limit)}
        if cursor:
            query['cursor'] = cursor
        conn.request('GET', '/v1/resources?' + urllib.parse.urlencode(query), headers={'Authorization': 'Bearer ' + token})
        response = conn.getresponse()
        body = response.read()
        if response.status != 200:
            raise SystemExit('GET /v1/resources answered %d: %s' % (response.status, body[:300]))
        page = json.loads(body)
        ids += page['ids']
        cursor = page.get('nextCursor')
        if not cursor:
            return ids


def callgrind(pid, work, keep, listing):
    """Instructions of the server for one whole listing at each limit (after the warm-up listings above), and for an
    idle window as long as the listing at 1000 (the policy watcher's polls and timers), from callgrind's dumps."""
    import glob, shutil
    def dump(label):
        before = len(glob.glob(os.path.join(work, 'cg.out.*')))
        subprocess.run(['callgrind_control', '-d', label, str(pid)], check=True, stdout=subprocess.DEVNULL)
        for _ in range(300):
            files = sorted(glob.glob(os.path.join(work, 'cg.out.*')), key=lambda f: int(f.rsplit('.', 1)[1]))
            if len(files) > before and 'totals:' in open(files[-1]).read():
                shutil.copy(files[-1], os.path.join(keep, 'dump.' + label))
                return int(next(l for l in open(files[-1]) if l.startswith('totals:')).split()[1])
            time.sleep(0.2)
        raise SystemExit('no callgrind dump for ' + label)
    subprocess.run(['callgrind_control', '-i', 'on', str(pid)], check=True, stdout=subprocess.DEVNULL)
    listing(1000), listing(100)
    subprocess.run(['callgrind_control', '-z', str(pid)], check=True, stdout=subprocess.DEVNULL)
    counts = {}
    for limit in (1000, 100):
        start_time = time.perf_counter()
        listing(limit)
        elapsed = time.perf_counter() - start_time
        counts[limit] = dump('limit%d' % limit)
        if limit == 1000:
            window = elapsed
    time.sleep(window)
    idle = dump('idle')
    for limit in (1000, 100):
        print('GET /v1/resources, every page of 10,000 ids, limit %4d: %12d instructions (%d net of an idle window of the '
              'limit-1000 listing\'s length), %d a page' % (limit, counts[limit], counts[limit] - idle, (counts[limit] - idle) // (10000 // limit)))
    print('dumps in %s (callgrind_annotate --inclusive=yes %s/dump.limit1000)' % (keep, keep))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument('--bin', default=os.path.join(ROOT, '.build-release/release/policy'))
    parser.add_argument('--rounds', type=int, default=7)
    parser.add_argument('--cpu', type=int)
    parser.add_argument('--callgrind')
    args = parser.parse_args()
    if args.cpu is not None:
        others = {c for c in os.sched_getaffinity(0) if c != args.cpu}
        if others:
            os.sched_setaffinity(0, others)
    work = tempfile.mkdtemp()
    database = os.path.join(work, 'identity.sqlite')
    if args.callgrind:
        os.makedirs(args.callgrind, exist_ok=True)
        prefix, binary, env = under_callgrind(args.bin, work, os.path.join(work, 'cg.out'))
        server, url = start(binary, database, args.cpu, prefix, env)
    else:
        server, url = start(args.bin, database, args.cpu)
    try:
        conn = http.client.HTTPConnection(url.hostname, url.port)
        me, token = sign_in(conn, 'list_me')
        other, _ = sign_in(conn, 'list_other')
        seed(database, me, other)
        db = sqlite3.connect(database)

        def plain():
            return [r[0] for r in db.execute('SELECT resourceId FROM membership WHERE userId = ? ORDER BY resourceId', [me])]

        expected = plain()
        assert len(expected) == 10000, len(expected)
        for limit in (1000, 100):
            listed = list_all(conn, token, limit)
            assert listed == expected, 'limit %d listed %d ids, not the SELECT\'s' % (limit, len(listed))
        if args.callgrind:
            callgrind(server.pid, work, args.callgrind, lambda limit: list_all(conn, token, limit))
            return
        times = {'plain': [], 1000: [], 100: []}
        for _ in range(args.rounds):
            for what in ('plain', 1000, 100):
                start_time = time.perf_counter()
                plain() if what == 'plain' else list_all(conn, token, what)
                times[what].append((time.perf_counter() - start_time) * 1000)
        base = statistics.median(times['plain'])
        print('plain SELECT of the 10,000 ids: %.2f ms (median of %d)' % (base, args.rounds))
        for limit in (1000, 100):
            t = statistics.median(times[limit])
            print('GET /v1/resources, every page, limit %4d: %7.2f ms (%.2fx)   runs: %s' % (
                limit, t, t / base, ' '.join('%.1f' % x for x in times[limit])))
        print('load average: %s' % ' '.join(open('/proc/loadavg').read().split()[:3]))
    finally:
        server.terminate()
        server.wait()


if __name__ == '__main__':
    main()
