#!/usr/bin/env python3
"""Unpack .deb files into a folder, like dpkg -x, with Python alone (the GPU machine may have
neither dpkg nor xz): a .deb is an ar archive whose data.tar.{xz,gz,zst} holds the files.
usage: unpack-debs.py DEST FILE.deb..."""
import io
import os
import sys
import tarfile


def members(path):
    with open(path, "rb") as f:
        if f.read(8) != b"!<arch>\n":
            raise SystemExit(f"{path}: not a .deb (ar) file")
        while True:
            head = f.read(60)
            if len(head) < 60:
                return
            name = head[:16].decode().strip().rstrip("/")
            size = int(head[48:58].decode().strip())
            data = f.read(size)
            if size % 2:
                f.read(1)
            yield name, data


def main():
    dest, debs = sys.argv[1], sys.argv[2:]
    os.makedirs(dest, exist_ok=True)
    for deb in debs:
        for name, data in members(deb):
            if not name.startswith("data.tar"):
                continue
            if name.endswith(".zst"):
                raise SystemExit(f"{deb}: zstd data is not supported here")
            with tarfile.open(fileobj=io.BytesIO(data), mode="r:*") as tar:
                for m in tar.getmembers():
                    # Links that point outside stay links; absolute ones are made relative to
                    # dest by the caller's LD_LIBRARY_PATH, so they are simply kept.
                    target = os.path.join(dest, m.name)
                    if m.isdir():
                        os.makedirs(target, exist_ok=True)
                        continue
                    os.makedirs(os.path.dirname(target), exist_ok=True)
                    if os.path.lexists(target):
                        os.remove(target)
                    if m.issym():
                        os.symlink(m.linkname, target)
                    elif m.islnk():
                        os.link(os.path.join(dest, m.linkname), target)
                    elif m.isfile():
                        with tar.extractfile(m) as src, open(target, "wb") as out:
                            out.write(src.read())
                        os.chmod(target, m.mode & 0o7777)


if __name__ == "__main__":
    main()
