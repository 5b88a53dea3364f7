package report

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/chromedp/chromedp"
)

// Screenshot opens the HTML file htmlPath in headless Chromium and writes a
// PNG of the whole page, not just the window, to pngPath. It needs a
// Chromium binary on PATH (Debian: apt-get install chromium); ctx bounds the
// whole thing, browser start included.
func Screenshot(ctx context.Context, htmlPath, pngPath string) error {
	// A fresh profile each time: nothing of an earlier run leaks in.
	profile, err := os.MkdirTemp("", "faultline-chromium-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(profile)
	bctx, cancel, err := htmlBrowser(ctx, profile)
	if err != nil {
		return err
	}
	defer cancel()
	if err := htmlOpen(bctx, htmlPath); err != nil {
		return err
	}
	return htmlSavePNG(bctx, pngPath)
}

// HaveBrowser says whether Screenshot can find Chromium.
func HaveBrowser() bool {
	_, err := htmlBrowserPath()
	return err == nil
}

// htmlBrowserNames are the names Chromium goes by on Linux distributions.
var htmlBrowserNames = []string{"chromium", "chromium-browser", "google-chrome-stable", "google-chrome"}

// htmlBrowserPath finds a Chromium binary on PATH.
func htmlBrowserPath() (string, error) {
	for _, name := range htmlBrowserNames {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", errors.New("no Chromium on PATH (Debian: apt-get install chromium)")
}

// htmlBrowser starts headless Chromium with profile as its user data
// directory and returns a context for its first tab; cancel stops it.
func htmlBrowser(ctx context.Context, profile string) (context.Context, context.CancelFunc, error) {
	exe, err := htmlBrowserPath()
	if err != nil {
		return nil, nil, err
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(exe),
		chromedp.UserDataDir(profile),
		// Containers and CI run as root, where the sandbox cannot start.
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		// The page needs no network; on a closed network Chromium's own
		// background traffic only fails, noisily.
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.WindowSize(1400, 900),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	bctx, cancelTab := chromedp.NewContext(actx)
	return bctx, func() { cancelTab(); cancelAlloc() }, nil
}

// htmlOpen loads a local file in the tab and waits for it to load.
func htmlOpen(ctx context.Context, htmlPath string) error {
	abs, err := filepath.Abs(htmlPath)
	if err != nil {
		return err
	}
	u := (&url.URL{Scheme: "file", Path: filepath.ToSlash(abs)}).String()
	if err := chromedp.Do(ctx, chromedp.Navigate(u)); err != nil {
		return fmt.Errorf("open %s in Chromium: %w", u, err)
	}
	return nil
}

// htmlSavePNG writes the whole page as it is now to pngPath.
func htmlSavePNG(ctx context.Context, pngPath string) error {
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100)) // 100: PNG, not JPEG
	if err != nil {
		return fmt.Errorf("screenshot: %w", err)
	}
	return os.WriteFile(pngPath, png, 0o644)
}
