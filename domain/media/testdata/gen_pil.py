# Goldens for the resize step: what transformers' Qwen2-VL image processor does before
# rescale/normalize, i.e. PIL Image.resize((w, h), resample=BICUBIC) of the RGB image to
# smart_resize's size. Run with Debian's python3-pil (9.4.0 produced the files here):
#   /usr/bin/python3 domain/media/testdata/gen_pil.py
import math, os
from PIL import Image

HERE = os.path.dirname(os.path.abspath(__file__))

def smart_resize(height, width, factor=28, min_pixels=3136, max_pixels=12845056):
    h_bar = round(height / factor) * factor
    w_bar = round(width / factor) * factor
    if h_bar * w_bar > max_pixels:
        beta = math.sqrt((height * width) / max_pixels)
        h_bar = max(factor, math.floor(height / beta / factor) * factor)
        w_bar = max(factor, math.floor(width / beta / factor) * factor)
    elif h_bar * w_bar < min_pixels:
        beta = math.sqrt(min_pixels / (height * width))
        h_bar = math.ceil(height * beta / factor) * factor
        w_bar = math.ceil(width * beta / factor) * factor
    return h_bar, w_bar

for name, (w, h) in {"up": (50, 37), "down": (170, 120)}.items():
    img = Image.new("RGB", (w, h))
    img.putdata([((x * 5 + y * 3) % 256, (x * y) % 256, (255 - x * 2 + y) % 256) for y in range(h) for x in range(w)])
    img.save(os.path.join(HERE, f"pil_{name}_in.png"))
    rh, rw = smart_resize(h, w)
    out = img.resize((rw, rh), resample=Image.BICUBIC)
    with open(os.path.join(HERE, f"pil_{name}_{rw}x{rh}.rgb"), "wb") as f:
        f.write(out.tobytes())
    print(name, w, h, "->", rw, rh)

# The whole Qwen2-VL slow-processor chain for the upscale case (transformers
# image_processing_qwen2_vl._preprocess): rescale in float64 then float32, normalize in
# float32, the frame repeated to temporal_patch_size, then the reshape/transpose to
# pixel_values [patches, C*T*P*P], written as little-endian float32.
import numpy as np
img = Image.open(os.path.join(HERE, "pil_up_in.png")).convert("RGB")
rh, rw = smart_resize(img.height, img.width)
arr = np.array(img.resize((rw, rh), resample=Image.BICUBIC))            # HWC uint8
arr = (arr.astype(np.float64) * (1 / 255)).astype(np.float32)
mean = np.array([0.48145466, 0.4578275, 0.40821073], dtype=np.float32)
std = np.array([0.26862954, 0.26130258, 0.27577711], dtype=np.float32)
arr = (arr - mean) / std
patches = np.array([arr.transpose(2, 0, 1)])                             # T C H W
patches = np.tile(patches, (2, 1, 1, 1))
P, M, T = 14, 2, 2
gh, gw = rh // P, rw // P
patches = patches.reshape(1, T, 3, gh // M, M, P, gw // M, M, P)
patches = patches.transpose(0, 3, 6, 4, 7, 2, 1, 5, 8)
flat = patches.reshape(gh * gw, 3 * T * P * P).astype("<f4")
flat.tofile(os.path.join(HERE, f"hf_up_pixel_values_{gh * gw}x{3 * T * P * P}.f32"))
print("pixel_values", flat.shape)
