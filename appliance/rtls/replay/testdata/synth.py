#!/usr/bin/env python3
"""Synthetic walk dataset in the rssi-replay format.
usage: synth.py OUTDIR [--zones CxR] [--zsize M] [--gws N] [--beacons B] [--train-s S] [--test-s S]
       [--hz F] [--pos known|null|mix] [--seed K] [--dwell S] [--phear P] [--offset-scale F]
       [--walls P] [--colw W,W,...] [--rowh H,H,...] [--wall-db D] [--wander P]

Each walk's tag is heard uniform(-2, 2) dB off the law, times --offset-scale
(0: every tag is the survey tag; the draws, and so the walks, stay the same).
--walls P puts a wall (no door) between each pair of neighbouring rooms with
probability P, keeping every room reachable: site.json's adjacency lists only
the doors, and the tags walk through doors only (0: the same sets as before).
--colw / --rowh give each column's width and each row's height in metres
(rooms of mixed sizes: bathrooms beside wards); they override --zones and
--zsize.
--wall-db D takes D dB off a reading for every room boundary between the
tag and the gateway (the multi-wall model: a straight line between two rooms
of a rectilinear plan crosses |columns apart| + |rows apart| of them), a loss
the log-distance law the engine fits does not know (0: the same sets as
before).
--wander P is the chance, each second a tag stands at its target, that it
moves on to another point of its room (0.1: people; near 0: assets, a bed or
a pump that stays where it is put for minutes)."""
import argparse, json, math, os, random
ap=argparse.ArgumentParser()
ap.add_argument('out'); ap.add_argument('--zones',default='4x3'); ap.add_argument('--zsize',type=float,default=10)
ap.add_argument('--gws',type=int,default=12); ap.add_argument('--beacons',type=int,default=2)
ap.add_argument('--train-s',type=int,default=1800); ap.add_argument('--test-s',type=int,default=1200)
ap.add_argument('--hz',type=float,default=1.0); ap.add_argument('--pos',default='known')
ap.add_argument('--seed',type=int,default=1); ap.add_argument('--dwell',type=float,default=60)
ap.add_argument('--phear',type=float,default=0.9); ap.add_argument('--t0',type=int,default=1700000000000)
ap.add_argument('--gwcols',type=int,default=0)
ap.add_argument('--offset-scale',type=float,default=1.0)
ap.add_argument('--walls',type=float,default=0.0)
ap.add_argument('--colw',default=''); ap.add_argument('--rowh',default='')
ap.add_argument('--wall-db',type=float,default=0.0)
ap.add_argument('--wander',type=float,default=0.1)
a=ap.parse_args()
rnd=random.Random(a.seed)
C,R=map(int,a.zones.split('x')); S=a.zsize
cw=[float(v) for v in a.colw.split(',')] if a.colw else [S]*C
rh=[float(v) for v in a.rowh.split(',')] if a.rowh else [S]*R
C,R=len(cw),len(rh)
xs=[0.0]
for v in cw: xs.append(xs[-1]+v)
ys=[0.0]
for v in rh: ys.append(ys[-1]+v)
W,H=xs[-1],ys[-1]
zones=[]; zname={}
for r in range(R):
    for c in range(C):
        n=('Z%d%d'%(c,r)) if C<=10 and R<=10 else ('Z%d_%d'%(c,r)); zname[(c,r)]=n
        zones.append(dict(name=n,x1=xs[c],y1=ys[r],x2=xs[c+1],y2=ys[r+1]))
adj=[]
for r in range(R):
    for c in range(C):
        if c+1<C: adj.append([zname[(c,r)],zname[(c+1,r)]])
        if r+1<R: adj.append([zname[(c,r)],zname[(c,r+1)]])
if a.walls>0:
    # A random spanning tree keeps every room reachable; each other door
    # is walled with probability --walls (its own generator: the walks
    # draw from rnd as without walls).
    wr=random.Random(a.seed*7919+1); wr.shuffle(adj)
    parent={z['name']:z['name'] for z in zones}
    def root(n):
        while parent[n]!=n: n=parent[n]
        return n
    kept=[]
    for e in adj:
        ra,rb=root(e[0]),root(e[1])
        if ra!=rb: parent[ra]=rb; kept.append(e)
        elif wr.random()>=a.walls: kept.append(e)
    adj=kept
doors={}
for u,v in adj: doors.setdefault(u,set()).add(v); doors.setdefault(v,set()).add(u)
gws=[]
gc=a.gwcols or max(1,int(round(math.sqrt(a.gws*W/H))))
for i in range(a.gws):
    gx=( (i%gc)+0.5)*W/gc; gy=((i//gc)+0.5)*H/math.ceil(a.gws/gc)
    gx+=rnd.uniform(-1,1); gy+=rnd.uniform(-1,1)
    gws.append((('G%02d'%(i+1)),gx,gy))
def gwjson(i,g):
    known = a.pos=='known' or (a.pos=='mix' and i%2==0)
    return dict(id=g[0],x=round(g[1],2) if known else None,y=round(g[2],2) if known else None)
site=dict(map=dict(width=W,height=H),zones=zones,adjacency=adj,gateways=[gwjson(i,g) for i,g in enumerate(gws)])
os.makedirs(a.out,exist_ok=True)
json.dump(site,open(os.path.join(a.out,'site.json'),'w'),indent=1)
import bisect
def zone_at(x,y):
    c=min(C-1,max(0,bisect.bisect_right(xs,x)-1)); r=min(R-1,max(0,bisect.bisect_right(ys,y)-1)); return zname[(c,r)]
def cell_at(x,y):
    return min(C-1,max(0,bisect.bisect_right(xs,x)-1)), min(R-1,max(0,bisect.bisect_right(ys,y)-1))
def walls_between(x,y,gx,gy):
    (c1,r1),(c2,r2)=cell_at(x,y),cell_at(gx,gy); return abs(c1-c2)+abs(r1-r2)
def at(c,r,u,v): return xs[c]+u*cw[c], ys[r]+v*rh[r]
def walk(dur,bid,t0,out):
    # each beacon hops zone to adjacent zone, dwell in zone ~dwell s, moving inside
    c,r=rnd.randrange(C),rnd.randrange(R)
    x,y=at(c,r,0.5,0.5)
    tx,ty=x,y; t=0.0; next_hop=rnd.expovariate(1/a.dwell)
    off=rnd.uniform(-2,2)*a.offset_scale
    dt=1.0/a.hz
    while t<dur:
        if t>=next_hop:
            nb=[(c+dc,r+dr) for dc,dr in ((1,0),(-1,0),(0,1),(0,-1)) if 0<=c+dc<C and 0<=r+dr<R and zname[(c+dc,r+dr)] in doors.get(zname[(c,r)],())]
            c,r=rnd.choice(nb); next_hop=t+rnd.expovariate(1/a.dwell)
            tx,ty=at(c,r,rnd.uniform(0.2,0.8),rnd.uniform(0.2,0.8))
        # move toward target at 1 m/s
        dx,dy=tx-x,ty-y; d=math.hypot(dx,dy)
        if d>dt*1.0: x+=dx/d*dt; y+=dy/d*dt
        else:
            x,y=tx,ty
            if rnd.random()<a.wander: tx,ty=at(c,r,rnd.uniform(0.1,0.9),rnd.uniform(0.1,0.9))
        z=zone_at(x,y)
        tm=t0+int(t*1000)
        for g,gx,gy in gws:
            dd=max(0.5,math.hypot(x-gx,y-gy))
            rs=-59+off-10*2.2*math.log10(dd)+rnd.gauss(0,4)
            if a.wall_db: rs-=a.wall_db*walls_between(x,y,gx,gy)
            if rs<-100 or rnd.random()>a.phear: continue
            out.append((tm+rnd.randrange(0,int(1000*dt)),g,bid,int(round(rs)),z,round(x,2),round(y,2)))
        t+=dt
def write(fn,dur,t0):
    rows=[]
    for b in range(a.beacons): walk(dur,'B%d'%(b+1),t0,rows)
    rows.sort()
    with open(os.path.join(a.out,fn),'w') as f:
        f.write('t_ms,gateway,beacon,rssi,zone,x,y\n')
        for r in rows: f.write('%d,%s,%s,%d,%s,%s,%s\n'%r)
write('train.csv',a.train_s,a.t0)
write('test.csv',a.test_s,a.t0+a.train_s*1000+3600000)
