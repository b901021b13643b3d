"""Megatron-LM's model-parallel rank groups, for every rank of a world (pure Python).

The same arithmetic as libcohort's layouts (src/group/layout_gen.c, after
megatron/core/parallel_state.py's two RankGenerators), needed where every rank must list every
group: the classic torch.distributed.new_group pattern, where every rank calls new_group for
every group. cohort's own layouts only ever build the caller's groups; the tests check that
both agree.
"""

_DIMS = ("tp", "pp", "dp", "ep", "cp")  # Megatron's name_to_size order
# kind -> (generator, token passed to get_ranks, embedding rule)
KINDS = {
    "tp": ("dense", "tp", None), "pp": ("dense", "pp", None), "dp": ("dense", "dp", None),
    "cp": ("dense", "cp", None), "dp-cp": ("dense", "dp-cp", None),
    "tp-pp": ("dense", "tp-pp", None), "tp-cp": ("dense", "tp-cp", None),
    "tp-dp": ("dense", "tp-dp", None), "tp-dp-cp": ("dense", "tp-dp-cp", None),
    "embd": ("dense", "pp", "first-last"), "pos-embd": ("dense", "pp", "first"),
    "ep": ("expert", "ep", None), "etp": ("expert", "tp", None),
    "etp-ep": ("expert", "tp-ep", None), "etp-ep-pp": ("expert", "tp-ep-pp", None),
    "edp": ("expert", "dp", None),
}
KIND_ORDER = ("tp", "pp", "dp", "cp", "dp-cp", "tp-pp", "tp-cp", "tp-dp", "tp-dp-cp", "embd",
              "pos-embd", "ep", "etp", "etp-ep", "etp-ep-pp", "edp")


class LayoutSpec:
    """parse("tp=2,pp=2,ep=2,etp=1", world) -> the layout's groups for that world size."""

    def __init__(self, spec, world):
        vals = {"tp": 1, "pp": 1, "cp": 1, "ep": 1}
        order = None
        etp = None
        for item in filter(None, (s.strip() for s in (spec or "").split(","))):
            if "=" not in item:
                raise ValueError("malformed item %r: expected key=value" % item)
            k, v = (x.strip() for x in item.split("=", 1))
            if k == "order":
                order = v.split("-")
            elif k == "etp":
                etp = int(v)
            elif k in vals:
                vals[k] = int(v)
            else:
                raise ValueError("unknown key %r (known: tp pp cp ep etp order)" % k)
        self.world = world
        self.tp, self.pp, self.cp, self.ep = vals["tp"], vals["pp"], vals["cp"], vals["ep"]
        self.etp = self.tp if etp is None else etp
        for what, prod in (("tp*pp*cp", self.tp * self.pp * self.cp),
                           ("etp*ep*pp", self.etp * self.ep * self.pp)):
            if prod <= 0 or world % prod:
                raise ValueError("%s = %d does not divide world size %d" % (what, prod, world))
        self.dp = world // (self.tp * self.pp * self.cp)
        self.edp = world // (self.etp * self.ep * self.pp)
        dense = {"tp": self.tp, "pp": self.pp, "dp": self.dp, "ep": 1, "cp": self.cp}
        expert = {"tp": self.etp, "pp": self.pp, "dp": self.edp, "ep": self.ep, "cp": 1}
        order = list(order or ["tp", "cp", "ep", "dp", "pp"])
        for d in _DIMS:
            if d not in order:
                if dense[d] != 1 or expert[d] != 1:
                    raise ValueError("order leaves out %s, whose size is not 1" % d)
                order.append(d)
        self.order = order
        self._sizes = {"dense": [dense[d] for d in order], "expert": [expert[d] for d in order]}

    def _geom(self, kind):
        gen, token, embd = KINDS[kind]
        sizes = self._sizes[gen]
        strides, p = [], 1
        for s in sizes:
            strides.append(p)
            p *= s
        masked = [d in token.split("-") for d in self.order]
        return sizes, strides, masked, embd

    def groups(self, kind):
        """Every group of kind in the world, in Megatron's order, as lists of world ranks."""
        sizes, strides, masked, embd = self._geom(kind)
        gsize = 1
        for s, m in zip(sizes, masked):
            gsize *= s if m else 1
        out = []
        for index in range(self.world // gsize):
            base, rest = 0, index
            for s, st, m in zip(sizes, strides, masked):
                if not m:
                    base += (rest % s) * st
                    rest //= s
            members = []
            for j in range(gsize):
                rank, r = base, j
                for s, st, m in zip(sizes, strides, masked):
                    if m:
                        rank += (r % s) * st
                        r //= s
                members.append(rank)
            if embd == "first" or (embd == "first-last" and len(members) == 1):
                members = members[:1]
            elif embd == "first-last":
                members = [members[0], members[-1]]
            out.append(members)
        return out

    def rank_group(self, kind, rank):
        """The members of rank's group of kind, or None (embd, pos-embd)."""
        for g in self.groups(kind):
            if rank in g:
                return g
        return None

    def all_groups(self):
        """[(kind, members)] for every group of every kind, in the classic creation order."""
        return [(k, g) for k in KIND_ORDER for g in self.groups(k)]


def parse(spec, world):
    return LayoutSpec(spec, world)


def member_only(create_group):
    """The seed's change to Megatron-core's parallel_state.create_group, applied by the caller
    without editing Megatron: `ps.create_group = member_only(ps.create_group)` before
    initialize_model_parallel. A rank outside `ranks` skips the call (torch's non-member handle),
    and the members' call passes use_local_synchronization=True, so no group is made by a rank
    outside it. On backend cohort that costs no message; gloo and NCCL on torch 2.15 cannot do it
    (docs/torch.md). tests/python/test_megatron.py checks the groups it gives."""
    import torch.distributed as dist

    def create(ranks=None, *args, **kwargs):
        if ranks is not None and dist.get_rank() not in ranks:
            return dist.GroupMember.NON_GROUP_MEMBER
        kwargs["use_local_synchronization"] = True
        return create_group(ranks, *args, **kwargs)
    return create
